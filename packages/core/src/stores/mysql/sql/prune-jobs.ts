/**
 * Prune jobs: `Store.pruneJobs`, two `DELETE`s along `finished` (`PRUNING_INDEX`): up to `limit` jobs past their
 * own retention (`prune_at_ms` at or before `now`), oldest first, then, up to what remains of `limit`, the finished
 * jobs without one that finished before `finishedBefore`, oldest first. Returns how many it deleted.
 */
import { FINISHED_STATES } from '../../../jobs.ts';
import { execute, type Queryable } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

/** The finished states as the placeholders of an `IN (…)` list, their values passed as parameters. */
const FINISHED_STATE_PLACEHOLDERS = FINISHED_STATES.map(() => '?').join(', ');

export async function pruneJobs(
  db: Queryable,
  t: Tables,
  finishedBefore: Date,
  limit: number,
  now: Date,
): Promise<number> {
  const max = Math.floor(limit);
  if (!(max > 0)) return 0;
  const own = await execute(db, `DELETE FROM ${t.jobs} WHERE prune_at_ms <= ? ORDER BY prune_at_ms LIMIT ?`, [
    now.getTime(),
    max,
  ]);
  if (own.affectedRows >= max) return own.affectedRows;
  const shared = await execute(
    db,
    `DELETE FROM ${t.jobs}
         WHERE prune_at_ms IS NULL AND finished_at < ? AND state IN (${FINISHED_STATE_PLACEHOLDERS})
         ORDER BY finished_at LIMIT ?`,
    [sqlDate(finishedBefore), ...FINISHED_STATES, max - own.affectedRows],
  );
  return own.affectedRows + shared.affectedRows;
}
