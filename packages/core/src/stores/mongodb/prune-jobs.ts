import type { Collection, DeleteOptions, Filter } from 'mongodb';
import { FINISHED_STATES } from '../../jobs.ts';
import { idsByName } from './by-name.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import type { JobDocument } from './records.ts';

/**
 * `Store.pruneJobs` on MongoDB: deletes up to `max` finished jobs, those past a retention of their own at `now`
 * first, then those kept for the server-wide retention that finished before `finishedBefore`. Each look-up reads
 * through an index (`own_retention`, the history TTL index); each delete is targeted per job type. Resolves to
 * how many it deleted.
 */
export async function pruneFinishedJobs(
  jobs: Collection<JobDocument>,
  callLimitMs: number,
  at: { now: Date; finishedBefore: Date },
  max: number,
): Promise<number> {
  let pruned = 0;
  for (const filter of [pastOwnRetention(at.now), ...pastSharedRetention(at.finishedBefore)]) {
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

/** The ends a job may have a retention of its own for, each with its field. */
const OWN_RETENTION_ENDS = [
  { state: 'completed', field: 'retainCompletedMs' },
  { state: 'dead', field: 'retainDeadMs' },
] as const;

/**
 * The jobs past their own retention at `now`: ended completed or dead with a retention for that end, and
 * finished at least that long ago. Read through `own_retention` (the query repeats its condition).
 */
function pastOwnRetention(now: Date): Filter<JobDocument> {
  return {
    retainCompletedMs: { $exists: true },
    finishedAt: { $lte: now },
    $or: OWN_RETENTION_ENDS.map(({ state, field }) => ({
      state,
      [field]: { $type: 'number' },
      $expr: { $lte: [{ $add: ['$finishedAt', `$${field}`] }, now] },
    })),
  } as Filter<JobDocument>;
}

/**
 * The finished jobs kept for the server-wide retention that finished before `finishedBefore`, in two look-ups
 * each through an index: those without a retention of their own (marked `ttl`, in the history TTL index, which
 * expires them too), and those with one that does not name the end they came to (in `own_retention`). Jobs an
 * earlier version wrote carry neither field: the TTL index of that version expires them until
 * `dropRetiredMongoIndexes` marks them and drops it.
 */
function pastSharedRetention(finishedBefore: Date): Filter<JobDocument>[] {
  return [
    { ttl: true, finishedAt: { $type: 'date', $lt: finishedBefore }, state: { $in: [...FINISHED_STATES] } },
    {
      retainCompletedMs: { $exists: true },
      finishedAt: { $lt: finishedBefore },
      state: { $in: [...FINISHED_STATES] },
      $nor: OWN_RETENTION_ENDS.map(({ state, field }) => ({ state, [field]: { $type: 'number' } })),
    },
  ] as Filter<JobDocument>[];
}
