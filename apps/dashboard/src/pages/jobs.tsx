import { JOB_STATES, type JobStatus } from '@workq/core';
import { useState } from 'preact/hooks';
import { bulkActions } from '../bulk.ts';
import { ConfirmDialog, type PendingAction, plural } from '../components/confirm.tsx';
import { ErrorNote, relativeTime, StateBadge } from '../components/format.tsx';
import { MAX_SCANNED, scanJobs, timeOfId } from '../job-scan.ts';
import { useLoad } from '../load.ts';
import { Link, navigate } from '../router.tsx';
import { useApi } from '../use-api.ts';

const PAGE_SIZE = 50;

/** The list's filter, as it stands in the page's URL. */
interface Filter {
  name: string;
  state: string;
  q: string;
  from: string;
  to: string;
  page: number;
}

function filterOf(query: URLSearchParams): Filter {
  return {
    name: query.get('name') ?? '',
    state: query.get('state') ?? '',
    q: query.get('q') ?? '',
    from: query.get('from') ?? '',
    to: query.get('to') ?? '',
    page: Math.max(0, Number(query.get('page') ?? 0) || 0),
  };
}

function hrefOf(filter: Filter): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filter)) if (value !== '' && value !== 0) query.set(key, String(value));
  const text = query.toString();
  return text ? `/jobs?${text}` : '/jobs';
}

/** Whether `job` matches the search text (its id or idempotency key) and the time range (by creation). */
function matches(job: JobStatus, filter: Filter): boolean {
  const q = filter.q.trim();
  if (q && job.id !== q && job.idempotencyKey !== q && !job.id.startsWith(q) && !job.idempotencyKey?.includes(q)) {
    return false;
  }
  const created = new Date(job.createdAt).getTime();
  if (filter.from && created < new Date(filter.from).getTime()) return false;
  if (filter.to && created > new Date(filter.to).getTime()) return false;
  return true;
}

/** Jobs by type and state, newest first, searchable by id, idempotency key and time range, paged. */
export function JobsPage(props: { query: URLSearchParams }) {
  const api = useApi();
  const filter = filterOf(props.query);
  const [pending, setPending] = useState<PendingAction | null>(null);
  const names = useLoad(async () => [...new Set((await api.admin.stats.query()).counts.map((c) => c.name))].sort(), []);
  // A whole job id names its creation time: only that millisecond is read, however old the job.
  const idTime = timeOfId(filter.q.trim());
  const fromMs = idTime ?? (filter.from ? new Date(filter.from).getTime() : undefined);
  const toMs = idTime ?? (filter.to ? new Date(filter.to).getTime() : undefined);
  const scanned = useLoad(
    () =>
      scanJobs(api, {
        name: filter.name,
        state: filter.state,
        ...(fromMs !== undefined ? { fromMs } : {}),
        ...(toMs !== undefined ? { toMs } : {}),
      }),
    [filter.name, filter.state, fromMs, toMs],
  );
  const matching = (scanned.data?.jobs ?? []).filter((job) => matches(job, filter));
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const page = Math.min(filter.page, pages - 1);
  const shown = matching.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
  const narrowed = filter.q !== '' || filter.from !== '' || filter.to !== '';
  const describe = [
    filter.state || 'any state',
    filter.name ? `of ${filter.name}` : 'of every type',
    narrowed ? 'matching the search' : '',
  ]
    .filter(Boolean)
    .join(' ');
  const actions = bulkActions(api, {
    describe,
    jobs: matching,
    ...(filter.name && filter.state === 'dead' && !narrowed && !scanned.data?.truncated
      ? { allDeadOf: filter.name }
      : {}),
  });
  const go = (changes: Partial<Filter>) => navigate(hrefOf({ ...filter, page: 0, ...changes }), true);

  return (
    <section>
      <h1>Jobs</h1>
      <form
        key={`${filter.q}|${filter.from}|${filter.to}`}
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          go({
            q: String(form.get('q') ?? ''),
            from: String(form.get('from') ?? ''),
            to: String(form.get('to') ?? ''),
          });
        }}
      >
        <label>
          Type
          <select name="name" value={filter.name} onChange={(event) => go({ name: event.currentTarget.value })}>
            <option value="">every type</option>
            {(names.data ?? []).map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        <label>
          State
          <select name="state" value={filter.state} onChange={(event) => go({ state: event.currentTarget.value })}>
            <option value="">any state</option>
            {JOB_STATES.map((state) => (
              <option key={state}>{state}</option>
            ))}
          </select>
        </label>
        <label class="grow">
          Id or idempotency key
          <input name="q" type="search" defaultValue={filter.q} placeholder="Search…" />
        </label>
        <label>
          Created from
          <input name="from" type="datetime-local" step="1" defaultValue={filter.from} />
        </label>
        <label>
          to
          <input name="to" type="datetime-local" step="1" defaultValue={filter.to} />
        </label>
        <button type="submit">Search</button>
      </form>
      <ErrorNote error={scanned.error} />
      <div class="toolbar">
        <span class="muted" data-testid="match-count" data-count={scanned.data ? matching.length : undefined}>
          {scanned.loading && !scanned.data ? 'Loading…' : `${plural(matching.length, 'job')}`}
          {scanned.data?.truncated &&
            ` among the newest ${MAX_SCANNED.toLocaleString()} read: narrow the time range to reach older ones`}
        </span>
        <span class="spacer" />
        {actions.map(({ label, action }) => (
          <button type="button" key={label} onClick={() => setPending(action)}>
            {label}
          </button>
        ))}
      </div>
      <div class="table-wrap">
        <table class="jobs">
          <thead>
            <tr>
              <th>Id</th>
              <th>Type</th>
              <th>State</th>
              <th class="num wide">Attempts</th>
              <th class="wide">Idempotency key</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((job) => (
              <tr key={job.id} data-job={job.id}>
                <td class="mono">
                  <Link to={`/jobs/${encodeURIComponent(job.id)}`}>
                    <span class="id-full">{job.id}</span>
                    <span class="id-short" title={job.id}>
                      …{job.id.slice(-12)}
                    </span>
                  </Link>
                </td>
                <td>
                  {job.name} <span class="muted">v{job.version}</span>
                </td>
                <td>
                  <StateBadge state={job.state} />
                </td>
                <td class="num wide">
                  {job.attempts}/{job.maxAttempts}
                </td>
                <td class="wide mono">{job.idempotencyKey ?? ''}</td>
                <td title={new Date(job.createdAt).toISOString()}>{relativeTime(job.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {pages > 1 && (
        <nav class="pager">
          <button type="button" disabled={page === 0} onClick={() => navigate(hrefOf({ ...filter, page: page - 1 }))}>
            Newer
          </button>
          <span>
            Page {page + 1} of {pages}
          </span>
          <button
            type="button"
            disabled={page >= pages - 1}
            onClick={() => navigate(hrefOf({ ...filter, page: page + 1 }))}
          >
            Older
          </button>
        </nav>
      )}
      <ConfirmDialog action={pending} onClose={() => setPending(null)} />
    </section>
  );
}
