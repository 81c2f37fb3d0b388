import { JOB_STATES } from '@workq/core';
import { useEffect, useState } from 'preact/hooks';
import { chosenActions, countMatching, filterActions } from '../bulk.ts';
import { ConfirmDialog, type PendingAction, plural } from '../components/confirm.tsx';
import { EnqueueFirstJob } from '../components/empty-state.tsx';
import { ErrorNote, relativeTime, StateBadge } from '../components/format.tsx';
import { filterOf, isFiltered, type JobFilter, loadJobPage, PAGE_SIZE } from '../job-list.ts';
import { countArrivals, patchRows, type ShownRow, shownState } from '../job-patch.ts';
import { useLive } from '../live.ts';
import { useLoad } from '../load.ts';
import { Link, navigate } from '../router.tsx';
import { useApi } from '../use-api.ts';

function hrefOf(filter: JobFilter, cursor?: string): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filter)) if (value !== '') query.set(key, value);
  if (cursor) query.set('cursor', cursor);
  const text = query.toString();
  return text ? `/jobs?${text}` : '/jobs';
}

/**
 * Jobs newest first, filtered and paged by the server (one call a page); the
 * rows shown change with the event stream without being read again.
 */
export function JobsPage(props: { query: URLSearchParams }) {
  const api = useApi();
  const live = useLive();
  const filter = filterOf(props.query);
  const cursor = props.query.get('cursor') ?? undefined;
  const filterKey = JSON.stringify(filter);
  const [pending, setPending] = useState<PendingAction | null>(null);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [newer, setNewer] = useState<string[]>([]);
  const [rows, setRows] = useState<ShownRow[]>([]);
  const [arrived, setArrived] = useState(0);
  const [reread, setReread] = useState(0);
  const stats = useLoad(() => api.admin.stats.query(), [], true);
  const page = useLoad(() => loadJobPage(api, filter, cursor), [filterKey, cursor, reread], true);

  useEffect(() => {
    setRows(page.data?.jobs ?? []);
    setArrived(0);
  }, [page.data]);
  useEffect(() => {
    setSelected(new Set());
    if (!cursor) setNewer([]);
  }, [filterKey]);
  useEffect(
    () =>
      live.onEvents((events) => {
        setRows((before) => patchRows(before, events));
        // Only the first page shows the newest jobs: deeper pages are not pushed down by arrivals.
        const arrivals = cursor ? 0 : countArrivals(events, filter);
        if (arrivals > 0) setArrived((count) => count + arrivals);
      }),
    [live, filterKey, cursor],
  );

  const names = [...new Set((stats.data?.counts ?? []).map((row) => row.name))].sort();
  const versions = [
    ...new Set((stats.data?.counts ?? []).filter((row) => row.name === filter.name).map((row) => row.version)),
  ].sort((a, b) => b - a);
  const count = stats.data ? countMatching(stats.data.counts, filter) : undefined;
  const filtered = isFiltered(filter);
  const chosen = rows.filter((row) => selected.has(row.id)).map((row) => ({ id: row.id, state: shownState(row) }));
  const actions = [
    ...chosenActions(api, { describe: `${plural(chosen.length, 'selected job')}`, jobs: chosen }),
    ...(filtered ? filterActions(api, filter, count) : []),
  ];
  const go = (changes: Partial<JobFilter>) => navigate(hrefOf({ ...filter, ...changes }), true);
  const toggle = (id: string) =>
    setSelected((before) => {
      const next = new Set(before);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  const storeEmpty = stats.data !== undefined && stats.data.counts.length === 0;

  return (
    <section>
      <h1>Jobs</h1>
      <form
        key={filterKey}
        class="filters"
        aria-label="Filter jobs"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          const text = (key: string) => String(form.get(key) ?? '').trim();
          go({ q: text('q'), group: text('group'), from: text('from'), to: text('to') });
        }}
      >
        <label>
          Type
          <select
            name="name"
            value={filter.name}
            onChange={(event) => go({ name: event.currentTarget.value, version: '' })}
          >
            <option value="">every type</option>
            {names.map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        <label>
          Version
          <select
            name="version"
            value={filter.version}
            disabled={!filter.name}
            onChange={(event) => go({ version: event.currentTarget.value })}
          >
            <option value="">any</option>
            {versions.map((version) => (
              <option key={version} value={String(version)}>
                v{version}
              </option>
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
        <label>
          Group
          <input name="group" defaultValue={filter.group} placeholder="any" />
        </label>
        <label class="grow">
          Id, idempotency or debounce key
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
        {filtered && (
          <button type="button" class="link" onClick={() => navigate('/jobs', true)}>
            Clear
          </button>
        )}
      </form>
      <ErrorNote error={page.error} outage={page.outage} />
      <div class="toolbar">
        <span
          class="muted"
          data-testid="match-count"
          data-count={page.data && !page.error ? (count ?? rows.length) : undefined}
        >
          {page.data === undefined
            ? page.error
              ? ''
              : 'Loading…'
            : count !== undefined
              ? plural(count, 'job')
              : `${plural(rows.length, 'job')}${page.data.nextCursor ? ' on this page, more below' : ''}`}
        </span>
        {arrived > 0 && (
          <button type="button" class="link" data-testid="arrived" onClick={() => setReread((n) => n + 1)}>
            {plural(arrived, 'new job')}: show
          </button>
        )}
        <span class="spacer" />
        {actions.map(({ label, action }) => (
          <button type="button" key={label} onClick={() => setPending(action)}>
            {label}
          </button>
        ))}
      </div>
      {!filtered && page.data && <p class="muted small">Filter by type or state to act on many jobs at once.</p>}
      {storeEmpty && !filtered ? (
        <EnqueueFirstJob />
      ) : page.data === undefined ? null : (
        <div class="table-wrap">
          <table class="jobs">
            <thead>
              <tr>
                <th>
                  <span class="visually-hidden">Select</span>
                </th>
                <th>Id</th>
                <th>Type</th>
                <th>State</th>
                <th>Error</th>
                <th class="num wide">Attempts</th>
                <th class="wide">Group</th>
                <th class="wide">Idempotency key</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((job) => (
                <tr key={job.id} data-job={job.id}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select job ${job.id}`}
                      checked={selected.has(job.id)}
                      onChange={() => toggle(job.id)}
                    />
                  </td>
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
                    <StateBadge state={shownState(job)} />
                    {job.retrying && <span class="muted small"> retrying</span>}
                  </td>
                  <td class="row-error" title={job.error?.message}>
                    {job.error?.message ?? ''}
                  </td>
                  <td class="num wide">
                    {job.attempts}/{job.maxAttempts}
                  </td>
                  <td class="wide mono">{job.group ?? ''}</td>
                  <td class="wide mono">{job.idempotencyKey ?? ''}</td>
                  <td title={new Date(job.createdAt).toISOString()}>{relativeTime(job.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.data && rows.length === 0 && <p class="muted">No job matches this filter.</p>}
        </div>
      )}
      {(cursor || page.data?.nextCursor) && (
        <nav class="pager" aria-label="Pages">
          <button
            type="button"
            disabled={!cursor}
            onClick={() => {
              const previous = newer.slice(0, -1);
              setNewer(previous);
              navigate(hrefOf(filter, newer.at(-1) || undefined));
            }}
          >
            Newer
          </button>
          <span>
            {PAGE_SIZE} a page{newer.length > 0 ? `, page ${newer.length + 1}` : ''}
          </span>
          <button
            type="button"
            disabled={!page.data?.nextCursor}
            onClick={() => {
              setNewer([...newer, cursor ?? '']);
              navigate(hrefOf(filter, page.data?.nextCursor ?? undefined));
            }}
          >
            Older
          </button>
        </nav>
      )}
      <ConfirmDialog action={pending} onClose={() => setPending(null)} />
    </section>
  );
}
