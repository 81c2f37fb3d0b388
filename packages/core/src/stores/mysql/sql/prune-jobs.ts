/**
 * Prune jobs: `Store.pruneJobs`, one `DELETE` of up to `limit` finished jobs that finished before
 * `finishedBefore`, oldest first, along `finished`. Returns how many it deleted.
 */
import { FINISHED_STATES } from '../../../jobs.ts';
import { execute, type Queryable } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

/** The finished states as the placeholders of an `IN (…)` list, their values passed as parameters. */
const FINISHED_STATE_PLACEHOLDERS = FINISHED_STATES.map(() => '?').join(', ');

export async function pruneJobs(db: Queryable, t: Tables, finishedBefore: Date, limit: number): Promise<number> {
  if (limit <= 0) return 0;
  const pruned = await execute(
    db,
    `DELETE FROM ${t.jobs}
         WHERE finished_at < ? AND state IN (${FINISHED_STATE_PLACEHOLDERS}) ORDER BY finished_at LIMIT ?`,
    [sqlDate(finishedBefore), ...FINISHED_STATES, Math.floor(limit)],
  );
  return pruned.affectedRows;
}
