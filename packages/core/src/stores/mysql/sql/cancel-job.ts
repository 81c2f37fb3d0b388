/**
 * Cancel a job: `Store.cancelJob`, in one transaction (the caller's). One `UPDATE` makes a job that has not
 * finished (`delayed`, `waiting` or `active`) `cancelled` and finished, its lease cleared, so a worker holding
 * it loses it; then the row is read back. Returns the job as cancelled, or null when there was no such job or
 * it had finished.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { JobRecord } from '../../../engine/store.ts';
import { execute } from '../connection.ts';
import { RELEASE_LEASE, selectJobsByIds } from '../job-queries.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function cancelJob(c: PoolConnection, t: Tables, id: string, now: Date): Promise<JobRecord | null> {
  const cancelled = await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'cancelled', delayed_until = NULL, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
     WHERE id = ? AND state IN ('delayed', 'waiting', 'active')`,
    [sqlDate(now), sqlDate(now), id],
  );
  return cancelled.affectedRows === 0 ? null : ((await selectJobsByIds(c, t, [id])).get(id) ?? null);
}
