/**
 * Remove a waiting job by its key: `AdminStore.removeJobByKey`, in one transaction (the caller's). The key's
 * holder is read and locked when it has not started (`delayed` or `waiting`) and is outside flows, so a claim
 * skips it (`SKIP LOCKED`) or has leased it already and it no longer matches; then it is deleted. Returns the
 * deleted job, or null when there was none to delete.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { JobRecord } from '../../../engine/store.ts';
import { execute, selectRows } from '../connection.ts';
import { JOB_SELECT, jobRow, NOT_STARTED_SQL } from '../records.ts';
import type { Tables } from '../tables.ts';
import { OUTSIDE_FLOWS } from './rerun-completed-job.ts';

export async function removeJobByKey(
  c: PoolConnection,
  t: Tables,
  name: string,
  key: string,
): Promise<JobRecord | null> {
  const [row] = await selectRows(
    c,
    `SELECT ${JOB_SELECT} FROM ${t.jobs}
     WHERE name = ? AND idempotency_key = ? AND state IN ${NOT_STARTED_SQL} AND ${OUTSIDE_FLOWS} FOR UPDATE`,
    [name, key],
  );
  if (!row) return null;
  const job = jobRow(row);
  await execute(c, `DELETE FROM ${t.jobs} WHERE id = ?`, [job.id]);
  return job;
}
