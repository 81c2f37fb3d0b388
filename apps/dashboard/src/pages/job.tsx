import { useEffect, useState } from 'preact/hooks';
import { chosenActions } from '../bulk.ts';
import { AttemptTimeline } from '../components/attempts.tsx';
import { ConfirmDialog, type PendingAction } from '../components/confirm.tsx';
import { FlowTree } from '../components/flow-tree.tsx';
import { ErrorNote, formatDuration, formatTime, JsonView, relativeTime, StateBadge } from '../components/format.tsx';
import { singleJobActions } from '../job-actions.ts';
import { useLive } from '../live.ts';
import { useLoad } from '../load.ts';
import { Link } from '../router.tsx';
import { useApi } from '../use-api.ts';

/** One job: payload, result, error, attempts, progress, run time, lease holder, and where it came from. */
export function JobPage(props: { id: string }) {
  const api = useApi();
  const [pending, setPending] = useState<PendingAction | null>(null);
  const live = useLive();
  // Read again when an event names this job: one small call, instead of on every change of the queue.
  const [reread, setReread] = useState(0);
  useEffect(
    () => live.onEvents((events) => events.some((event) => event.id === props.id) && setReread((n) => n + 1)),
    [live, props.id],
  );
  const loaded = useLoad(() => api.admin.job.query({ id: props.id }), [props.id, reread], true);
  const workers = useLoad(() => api.admin.workers.query(), [reread], true);
  const job = loaded.data;
  if (!job) {
    return (
      <section>
        <p>
          <Link to="/jobs">← Jobs</Link>
        </p>
        {loaded.error ? <ErrorNote error={loaded.error} outage={loaded.outage} /> : <p class="muted">Loading…</p>}
      </section>
    );
  }
  const holder = workers.data?.find((worker) => worker.id === job.workerId || worker.activeJobIds.includes(job.id));
  const ranMs = job.finishedAt ? new Date(job.finishedAt).getTime() - new Date(job.runAt).getTime() : undefined;
  const actions = chosenActions(api, { describe: `job ${job.id}`, jobs: [job] });
  actions.unshift(...singleJobActions(api, job));
  return (
    <section class="job" data-state={job.state}>
      <p>
        <Link to={`/jobs?name=${encodeURIComponent(job.name)}`}>← {job.name} jobs</Link>
      </p>
      <header class="job-head">
        <h1 class="mono">{job.id}</h1>
        <StateBadge state={job.state} />
        <span class="spacer" />
        {actions.map(({ label, action }) => (
          <button type="button" key={label} onClick={() => setPending(action)}>
            {label.replace(/ 1 job$/, '')}
          </button>
        ))}
      </header>
      {job.error && (
        <div class="card error-box" role="note">
          <h2>Error (attempt {job.error.attempt})</h2>
          <p class="worker-message">{job.error.message}</p>
          <p class="muted small">
            {job.error.name ? `${job.error.name} · ` : ''}
            {job.error.code ? `${job.error.code} · ` : ''}
            {job.error.permanent ? 'permanent · ' : ''}
            {formatTime(job.error.at)}
          </p>
        </div>
      )}
      <dl class="facts">
        <dt>Type</dt>
        <dd>
          {job.name} v{job.version}
        </dd>
        <dt>Attempts</dt>
        <dd>
          {job.attempts} of {job.maxAttempts}
        </dd>
        <dt>Progress</dt>
        <dd>
          <progress max={100} value={job.progress} /> {job.progress}%
        </dd>
        <dt>Priority</dt>
        <dd>{job.priority}</dd>
        <dt>Created</dt>
        <dd>{formatTime(job.createdAt)}</dd>
        <dt>Runs at</dt>
        <dd>
          {formatTime(job.runAt)} <span class="muted">({relativeTime(job.runAt)})</span>
        </dd>
        <dt>Finished</dt>
        <dd>
          {formatTime(job.finishedAt)}
          {ranMs !== undefined && <span class="muted"> ({formatDuration(ranMs)} after its run time)</span>}
        </dd>
        {job.leaseExpiresAt && (
          <>
            <dt>Lease</dt>
            <dd>until {formatTime(job.leaseExpiresAt)}</dd>
          </>
        )}
        <dt>Lease holder</dt>
        <dd>
          {holder ? (
            <Link to="/workers">
              {holder.host}
              {holder.pid !== null ? ` (pid ${holder.pid})` : ''}
            </Link>
          ) : job.workerId ? (
            <span class="mono">{job.workerId}</span>
          ) : (
            '—'
          )}
        </dd>
        <dt>Group</dt>
        <dd class="mono">{job.group ?? '—'}</dd>
        {job.idempotencyKey && (
          <>
            <dt>Idempotency key</dt>
            <dd class="mono">{job.idempotencyKey}</dd>
          </>
        )}
        <RelatedJob label="Replay of" id={job.replayOf} />
        <RelatedJob label="Moved from" id={job.movedFrom} />
        <RelatedJob label="Moved to" id={job.movedTo} />
        <RelatedJob label="Parent" id={job.parentId} />
        {job.onFailure && (
          <>
            <dt>If it fails</dt>
            <dd class="mono">{job.onFailure}</dd>
          </>
        )}
      </dl>
      {(job.childCount ?? 0) > 0 && (
        <div class="flow">
          <h2>
            Children <span class="muted small">({flowCounts(job.childCount ?? 0, job.pendingChildren ?? 0)})</span>
          </h2>
          <FlowTree id={job.id} childCount={job.childCount ?? 0} />
        </div>
      )}
      <AttemptTimeline errors={job.errors ?? []} />
      <div class="split">
        <div>
          <h2>Payload</h2>
          <JsonView value={job.payload} label="payload" />
        </div>
        <div>
          <h2>Result</h2>
          <JsonView value={job.result} label="result" />
        </div>
      </div>
      <ConfirmDialog action={pending} onClose={() => setPending(null)} />
    </section>
  );
}

/** How many children a parent has, and how many it still waits for. */
function flowCounts(childCount: number, pending: number): string {
  const all = `${childCount} in all`;
  return pending > 0 ? `${all}, ${pending} not ended` : all;
}

/** A fact naming another job (the one this replays, was moved from or to, or its parent), linked to its page; nothing without one. */
function RelatedJob(props: { label: string; id: string | undefined }) {
  if (!props.id) return null;
  return (
    <>
      <dt>{props.label}</dt>
      <dd class="mono">
        <Link to={`/jobs/${encodeURIComponent(props.id)}`}>{props.id}</Link>
      </dd>
    </>
  );
}
