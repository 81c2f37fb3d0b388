import type { Collection, Document } from 'mongodb';
import type { CountScope, JobCount } from '../../engine/store.ts';
import { FINISHED_STATES, JOB_STATES } from '../../jobs.ts';
import type { KeptState } from '../shared/not-started.ts';
import { withCallLimit } from './call-limit.ts';
import { CLAIM_INDEX, DELAYED_INDEX, LEASE_INDEX, PARENTS_WAITING_INDEX } from './indexes.ts';
import type { JobDocument } from './records.ts';

/** `list_by_state` `(state, _id)`: finished jobs are read by their states' ranges of it. */
const HISTORY_INDEX = 'list_by_state';

/**
 * The live states, each read through the partial index that holds exactly its jobs: finished history is in
 * none of them, so counting the live jobs costs nothing per finished job kept.
 */
const LIVE_STATES: readonly { state: KeptState; index: string }[] = [
  { state: 'waiting', index: CLAIM_INDEX },
  { state: 'delayed', index: DELAYED_INDEX },
  { state: 'waiting-children', index: PARENTS_WAITING_INDEX },
  { state: 'active', index: LEASE_INDEX },
];

type Grouped = { _id: { name: string; version: number; state: JobCount['state'] }; count: number };

/**
 * `Store.countJobs`: job counts by name, version and user-visible state at `now`. The live states
 * (`scheduled`, `ready`, `active`) are one aggregation per kept state, hinted to its partial index, so they
 * read only live jobs; with scope `'all'`, one more reads the finished ones, whose cost grows with the
 * history kept.
 */
export async function countJobs(
  jobs: Collection<JobDocument>,
  now: Date,
  scope: CountScope,
  limitMs: number,
): Promise<JobCount[]> {
  const count = (match: Document, hint: string, state: unknown) =>
    withCallLimit(limitMs, (signal) => grouped(jobs, match, hint, state, signal));
  const reads = LIVE_STATES.map(({ state, index }) => count({ state }, index, userState(state, now)));
  if (scope === 'all') reads.push(count({ state: { $in: [...FINISHED_STATES] } }, HISTORY_INDEX, '$state'));
  const counts = (await Promise.all(reads))
    .flat()
    .map(({ _id, count }): JobCount => ({ name: _id.name, version: _id.version, state: _id.state, count }));
  return merged(counts);
}

/** The state a job kept in `state` shows at `now`: a job not started is `scheduled` until its run time. */
function userState(state: KeptState, now: Date): unknown {
  if (state === 'active' || state === 'waiting-children') return state;
  return { $cond: [{ $gt: ['$runAt', now] }, 'scheduled', 'ready'] };
}

function grouped(
  jobs: Collection<JobDocument>,
  match: Document,
  hint: string,
  state: unknown,
  signal: AbortSignal,
): Promise<Grouped[]> {
  return jobs
    .aggregate<Grouped>(
      [{ $match: match }, { $group: { _id: { name: '$name', version: '$version', state }, count: { $sum: 1 } } }],
      { hint, signal },
    )
    .toArray();
}

/** One row per name, version and state (`waiting` and `delayed` both give `scheduled` and `ready` rows), in order. */
function merged(counts: JobCount[]): JobCount[] {
  const byKey = new Map<string, JobCount>();
  for (const row of counts) {
    const key = JSON.stringify([row.name, row.version, row.state]);
    const seen = byKey.get(key);
    if (seen) seen.count += row.count;
    else byKey.set(key, { ...row });
  }
  const rank = (state: string) => (JOB_STATES as readonly string[]).indexOf(state);
  return [...byKey.values()].sort(
    (a, b) => a.name.localeCompare(b.name) || a.version - b.version || rank(a.state) - rank(b.state),
  );
}
