/**
 * Restore a cancelled job: `AdminStore.restoreCancelledJob`, in one transaction (the caller's). One `UPDATE`
 * makes a cancelled job that never started (no attempt counted), outside flows, not started again: `delayed`
 * until its run time when that is after `now`, else `waiting`, in its old order; then the row is read back.
 * Returns the job, or null when there was no such job.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { JobRecord } from '../../../engine/store.ts';
import { execute } from '../connection.ts';
import { selectJobsByIds } from '../job-queries.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { OUTSIDE_FLOWS } from './rerun-completed-job.ts';

export async function restoreCancelledJob(
  c: PoolConnection,
  t: Tables,
  id: string,
  now: Date,
): Promise<JobRecord | null> {
  const at = sqlDate(now);
  const restored = await execute(
    c,
    `UPDATE ${t.jobs} SET state = IF(run_at > ?, 'delayed', 'waiting'), delayed_until = IF(run_at > ?, run_at, NULL),
       finished_at = NULL, updated_at = ?
     WHERE id = ? AND state = 'cancelled' AND attempts = 0 AND ${OUTSIDE_FLOWS}`,
    [at, at, at, id],
  );
  return restored.affectedRows === 0 ? null : ((await selectJobsByIds(c, t, [id])).get(id) ?? null);
}
