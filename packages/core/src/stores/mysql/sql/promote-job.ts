/**
 * Promote a job: `Store.promoteJob`, in one transaction (the caller's). One `UPDATE` makes a job not started
 * whose run time is after `now` (delayed, or waiting out a retry's backoff) waiting and due at `now`, keeping its
 * id and attempts, its order key recomputed; then the row is read back. Returns the job, or null when there was
 * no such job.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { JobRecord } from '../../../engine/store.ts';
import { execute } from '../connection.ts';
import { selectJobsByIds } from '../job-queries.ts';
import { NOT_STARTED_SQL, ORDER_KEY_SQL, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function promoteJob(c: PoolConnection, t: Tables, id: string, now: Date): Promise<JobRecord | null> {
  const promoted = await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'waiting', delayed_until = NULL, run_at = ?, order_key = ${ORDER_KEY_SQL},
       updated_at = ?
     WHERE id = ? AND state IN ${NOT_STARTED_SQL} AND run_at > ?`,
    [sqlDate(now), now.getTime(), now.getTime(), sqlDate(now), id, sqlDate(now)],
  );
  return promoted.affectedRows === 0 ? null : ((await selectJobsByIds(c, t, [id])).get(id) ?? null);
}
