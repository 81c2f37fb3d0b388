/**
 * Rerun a completed job: `AdminStore.rerunCompletedJob`, in one transaction (the caller's). One `UPDATE` makes
 * a completed job outside flows (no parent, no children) waiting and due at `now`, its order key recomputed,
 * with its attempts, result, last error, progress, `moved_to`, finish time and lease cleared; then the row is
 * read back. Returns the job, or null when there was no such job.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { JobRecord } from '../../../engine/store.ts';
import { execute } from '../connection.ts';
import { RELEASE_LEASE, selectJobsByIds } from '../job-queries.ts';
import { ORDER_KEY_SQL, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

/** A job outside flows: no parent, no children. */
export const OUTSIDE_FLOWS = 'parent_id IS NULL AND child_count = 0';

export async function rerunCompletedJob(
  c: PoolConnection,
  t: Tables,
  id: string,
  now: Date,
): Promise<JobRecord | null> {
  const rerun = await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'waiting', attempts = 0, run_at = ?, order_key = ${ORDER_KEY_SQL}, result = NULL,
       error = NULL, progress = 0, moved_to = NULL, finished_at = NULL, ${RELEASE_LEASE}, worker_id = NULL,
       updated_at = ?
     WHERE id = ? AND state = 'completed' AND ${OUTSIDE_FLOWS}`,
    [sqlDate(now), now.getTime(), now.getTime(), sqlDate(now), id],
  );
  return rerun.affectedRows === 0 ? null : ((await selectJobsByIds(c, t, [id])).get(id) ?? null);
}
