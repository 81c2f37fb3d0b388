import type { JobState } from '@workq/core';
import { useEffect } from 'preact/hooks';
import { EnqueueFirstJob } from '../components/empty-state.tsx';
import { FlowControl } from '../components/flow-control.tsx';
import { ErrorNote, formatTime, STATE_ORDER, StateBadge } from '../components/format.tsx';
import { Sparkline } from '../components/sparkline.tsx';
import { useLive } from '../live.ts';
import { useLoad } from '../load.ts';
import { Link } from '../router.tsx';
import { useApi } from '../use-api.ts';

interface TypeSummary {
  name: string;
  total: Record<string, number>;
  versions: { version: number; counts: Record<string, number>; read: boolean }[];
  read: boolean;
}

interface Counted {
  name: string;
  version: number;
  state: JobState;
  count: number;
}

interface Reader {
  name: string;
  minVersion: number;
  maxVersion: number;
}

/** Counts grouped by job type and version, with whether a connected worker reads each. */
export function summarize(counts: readonly Counted[], readers: readonly Reader[]): TypeSummary[] {
  const types = new Map<string, TypeSummary>();
  for (const { name, version, state, count } of counts) {
    const type = types.get(name) ?? { name, total: {}, versions: [], read: false };
    types.set(name, type);
    type.total[state] = (type.total[state] ?? 0) + count;
    let row = type.versions.find((v) => v.version === version);
    if (!row) {
      row = { version, counts: {}, read: false };
      type.versions.push(row);
    }
    row.counts[state] = (row.counts[state] ?? 0) + count;
  }
  for (const type of types.values()) {
    const own = readers.filter((reader) => reader.name === type.name);
    type.read = own.length > 0;
    for (const row of type.versions) {
      row.read = own.some((reader) => reader.minVersion <= row.version && row.version <= reader.maxVersion);
    }
    type.versions.sort((a, b) => b.version - a.version);
  }
  return [...types.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** One thing an operator should look at, and where the list of its jobs is. */
interface Attention {
  text: string;
  to: string;
}

/** What needs attention: dead jobs, paused types with waiting jobs, and waiting jobs no connected worker reads. */
export function needsAttention(types: readonly TypeSummary[], paused: ReadonlySet<string>): Attention[] {
  const items: Attention[] = [];
  const jobsOf = (name: string, state: string) => `/jobs?name=${encodeURIComponent(name)}&state=${state}`;
  for (const type of types) {
    const dead = type.total.dead ?? 0;
    if (dead > 0)
      items.push({
        text: `${dead} dead ${dead === 1 ? 'job' : 'jobs'} of ${type.name}`,
        to: jobsOf(type.name, 'dead'),
      });
    const ready = type.total.ready ?? 0;
    if (ready > 0 && paused.has(type.name)) {
      items.push({ text: `${type.name} is paused with ${ready} ready`, to: jobsOf(type.name, 'ready') });
    } else if (ready > 0 && !type.read) {
      items.push({
        text: `${ready} ready ${type.name} jobs wait: no worker reads the type`,
        to: jobsOf(type.name, 'ready'),
      });
    } else {
      for (const row of type.versions) {
        const waiting = row.counts.ready ?? 0;
        if (waiting === 0 || row.read) continue;
        const to = `/jobs?name=${encodeURIComponent(type.name)}&version=${row.version}&state=ready`;
        items.push({
          text: `${waiting} ready ${type.name} v${row.version} jobs wait: no worker reads v${row.version}`,
          to,
        });
      }
    }
  }
  return items;
}

/** Every job type: counts by state and version, the last hour's throughput, and where no worker reads. */
export function OverviewPage() {
  const api = useApi();
  const live = useLive();
  const stats = useLoad(() => api.admin.stats.query(), []);
  const queues = useLoad(() => api.admin.queues.query(), []);
  const types = stats.data ? summarize(stats.data.counts, stats.data.consumers) : [];
  const names = types.map((type) => type.name).join('\n');
  const paused = new Set((queues.data ?? []).filter((queue) => queue.paused).map((queue) => queue.name));
  const attention = needsAttention(types, paused);
  useEffect(() => {
    // Without history the throughput still counts from the stream: a failed read only leaves it emptier.
    if (names) live.seed(api, names.split('\n')).catch(() => undefined);
  }, [api, live, names]);
  return (
    <section>
      <h1>Job types</h1>
      <ErrorNote error={stats.error} outage={stats.outage} />
      {stats.data && types.length === 0 && <EnqueueFirstJob />}
      {attention.length > 0 && (
        <section class="card attention" aria-label="Needs attention" data-testid="attention">
          <strong>Needs attention:</strong>
          {attention.map((item) => (
            <Link key={item.text} to={item.to}>
              {item.text}
            </Link>
          ))}
        </section>
      )}
      <div class="types">
        {types.map((type) => {
          const queue = queues.data?.find((listed) => listed.name === type.name);
          const throughput = live.throughput(type.name);
          const completed = throughput.completed.reduce((a, b) => a + b, 0);
          const failed = throughput.failed.reduce((a, b) => a + b, 0);
          return (
            <article class="card type" key={type.name} data-type={type.name}>
              <header>
                <h2>
                  <Link to={`/jobs?name=${encodeURIComponent(type.name)}`}>{type.name}</Link>
                </h2>
                {queue?.paused && <span class="badge paused">paused</span>}
                {queue?.heldUntil && (
                  <span
                    class="badge held"
                    title="An upstream said to wait (ctx.rateLimited): no job of this type starts before then"
                  >
                    held until {formatTime(queue.heldUntil)}
                  </span>
                )}
                {!type.read && (
                  <span class="badge warn" title="No connected worker consumes this type">
                    no worker
                  </span>
                )}
              </header>
              {queue && <FlowControl name={type.name} settings={queue} />}
              <ul class="counts">
                {STATE_ORDER.map((state) => (
                  <li key={state}>
                    <Link to={`/jobs?name=${encodeURIComponent(type.name)}&state=${state}`}>
                      <StateBadge state={state} />
                      <strong data-count={state}>{type.total[state] ?? 0}</strong>
                    </Link>
                  </li>
                ))}
              </ul>
              <div class="throughput">
                <Sparkline
                  label={`${type.name}: completed and failed per minute`}
                  series={[
                    { values: throughput.completed, class: 'ok' },
                    { values: throughput.failed, class: 'bad' },
                  ]}
                />
                <span class="muted" data-throughput>
                  Last hour:{' '}
                  <span class="ok-text">
                    {completed}
                    {live.partial(type.name) ? '+' : ''} completed
                  </span>
                  ,{' '}
                  <span class="bad-text">
                    {failed}
                    {live.partial(type.name) ? '+' : ''} failed
                  </span>
                </span>
              </div>
              <div class="versions-wrap">
                <table class="versions">
                  <thead>
                    <tr>
                      <th>Version</th>
                      {STATE_ORDER.map((state) => (
                        <th key={state} class="num">
                          {state}
                        </th>
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {type.versions.map((row) => (
                      <tr key={row.version}>
                        <td>
                          v{row.version}{' '}
                          {!row.read && type.read && (
                            <span class="badge warn" title="No connected worker reads this version">
                              no worker
                            </span>
                          )}
                        </td>
                        {STATE_ORDER.map((state) => (
                          <td key={state} class="num">
                            {row.counts[state] ?? 0}
                          </td>
                        ))}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </article>
          );
        })}
      </div>
      <p class="muted small">
        Last hour: the jobs completed or dead that the store holds from the last hour, and from the page's opening every
        completion and failed attempt the event stream reports.
      </p>
    </section>
  );
}
