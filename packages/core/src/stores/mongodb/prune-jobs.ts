import type { Collection, DeleteOptions, Filter } from 'mongodb';
import { FINISHED_STATES } from '../../jobs.ts';
import { idsByName } from './by-name.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { OWN_RETENTION_INDEXES } from './indexes.ts';
import type { JobDocument } from './records.ts';

/**
 * `Store.pruneJobs` on MongoDB: deletes up to `max` finished jobs, those past a retention of their own at `now`
 * first, then those kept for the server-wide retention that finished before `finishedBefore`. Each look-up reads
 * through an index (`OWN_RETENTION_INDEXES`, the history TTL index, `OWN_RETENTION_CANCELLED_INDEX`) only the jobs it deletes,
 * plus one key per distinct retention; each delete is targeted per job type. Resolves to how many it deleted.
 */
export async function pruneFinishedJobs(
  jobs: Collection<JobDocument>,
  callLimitMs: number,
  at: { now: Date; finishedBefore: Date },
  max: number,
): Promise<number> {
  let pruned = 0;
  for await (const filter of pastOwnRetention(jobs, callLimitMs, at.now)) {
    if (pruned >= max) return pruned;
    pruned += await pruneWhere(jobs, callLimitMs, filter, max - pruned);
  }
  for (const filter of pastSharedRetention(at.finishedBefore)) {
    if (pruned >= max) break;
    pruned += await pruneWhere(jobs, callLimitMs, filter, max - pruned);
  }
  return pruned;
}

/** Deletes up to `max` jobs that `filter` matches: found first, then one delete per job type (`idsByName`). */
async function pruneWhere(
  jobs: Collection<JobDocument>,
  callLimitMs: number,
  filter: Filter<JobDocument>,
  max: number,
): Promise<number> {
  const found = await withCallLimit(callLimitMs, (signal) =>
    jobs.find(filter, { limit: max, projection: { _id: 1, name: 1 }, signal }).toArray(),
  );
  if (found.length === 0) return 0;
  let deleted = 0;
  for (const [name, ids] of idsByName(found)) {
    const { deletedCount } = await withCallLimit(callLimitMs, (signal) => {
      const options: Abortable<DeleteOptions> = { signal };
      return jobs.deleteMany({ ...filter, name, _id: { $in: ids } }, options);
    });
    deleted += deletedCount;
  }
  return deleted;
}

/**
 * The jobs past their own retention at `now`, one filter per end and distinct retention of that end: ended
 * there, with that retention, and finished at least that long before `now` (`finishedAt + retention <= now`,
 * exact in milliseconds since retentions are integers). Each reads a range of that end's index in
 * `OWN_RETENTION_INDEXES`, so only the jobs due; the distinct retentions are found along the same index, one key
 * each (the queries repeat the partial filter's `$exists`, which the server needs before it uses the index).
 */
async function* pastOwnRetention(
  jobs: Collection<JobDocument>,
  callLimitMs: number,
  now: Date,
): AsyncGenerator<Filter<JobDocument>> {
  for (const end of OWN_RETENTION_INDEXES) {
    const { state, field } = end;
    let retention = await nextRetention(jobs, callLimitMs, end, Number.NEGATIVE_INFINITY);
    while (retention !== null) {
      yield {
        state,
        [field]: { $exists: true, $type: 'number', $eq: retention },
        finishedAt: { $lte: new Date(now.getTime() - retention) },
      } as Filter<JobDocument>;
      retention = await nextRetention(jobs, callLimitMs, end, retention);
    }
  }
}

/** The smallest retention above `after` of the jobs in `end`'s index (read through it), or `null`. */
async function nextRetention(
  jobs: Collection<JobDocument>,
  callLimitMs: number,
  end: (typeof OWN_RETENTION_INDEXES)[number],
  after: number,
): Promise<number | null> {
  const { name, state, field } = end;
  const filter = { state, [field]: { $exists: true, $type: 'number', $gt: after } } as Filter<JobDocument>;
  const options = { sort: { [field]: 1 }, limit: 1, projection: { _id: 0, [field]: 1 }, hint: name } as const;
  const [found] = await withCallLimit(callLimitMs, (signal) => jobs.find(filter, { ...options, signal }).toArray());
  const retention = found?.[field as keyof JobDocument];
  return typeof retention === 'number' ? retention : null;
}

/**
 * The finished jobs kept for the server-wide retention that finished before `finishedBefore`, each look-up a
 * range of an index: those without a retention of their own (marked `ttl`, in the history TTL index, which
 * expires them too), those with one that does not name the end they came to (`null` for it, in that end's index
 * of `OWN_RETENTION_INDEXES`), and those cancelled with one (`OWN_RETENTION_CANCELLED_INDEX`). Jobs an earlier
 * version wrote without a retention of their own carry no marker: the TTL index of that version expires them
 * until `dropRetiredMongoIndexes` marks them and drops it.
 */
function pastSharedRetention(finishedBefore: Date): Filter<JobDocument>[] {
  const before = { $lt: finishedBefore };
  return [
    { ttl: true, finishedAt: { $type: 'date', ...before }, state: { $in: [...FINISHED_STATES] } },
    ...OWN_RETENTION_INDEXES.map(({ state, field }) => ({
      state,
      [field]: { $exists: true, $eq: null },
      finishedAt: before,
    })),
    { state: 'cancelled', retainCompletedMs: { $exists: true }, finishedAt: before },
  ] as Filter<JobDocument>[];
}
