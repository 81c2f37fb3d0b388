/**
 * Cancel a job: `Store.cancelJob`, in one transaction (the caller's). One `UPDATE` makes a job that has not
 * finished (`delayed`, `waiting`, `waiting-children` or `active`) `cancelled` and finished, its lease cleared,
 * so a worker holding it loses it; then the row is read back. In a flow, in the same transaction: a parent's
 * unfinished descendants are cancelled (cancel-descendants.ts), and a child settles its parent
 * (settle-parents.ts). Returns the job as cancelled, or null when there was no such job or
 * it had finished, and the names of the parents made ready.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { JobRecord } from '../../../engine/store.ts';
import { execute } from '../connection.ts';
import { RELEASE_LEASE, selectJobsByIds } from '../job-queries.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { cancelDescendants, UNFINISHED_SQL } from './cancel-descendants.ts';
import { settleParents } from './settle-parents.ts';

export async function cancelJob(
  c: PoolConnection,
  t: Tables,
  id: string,
  now: Date,
): Promise<{ job: JobRecord | null; ready: string[] }> {
  const cancelled = await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'cancelled', delayed_until = NULL, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
     WHERE id = ? AND state IN ${UNFINISHED_SQL}`,
    [sqlDate(now), sqlDate(now), id],
  );
  if (cancelled.affectedRows === 0) return { job: null, ready: [] };
  const job = (await selectJobsByIds(c, t, [id])).get(id) ?? null;
  if (!job) return { job: null, ready: [] };
  if ((job.childCount ?? 0) > 0) await cancelDescendants(c, t, [id], now);
  if (!job.parentId) return { job, ready: [] };
  const child = { id, name: job.name, parentId: job.parentId, onFailure: job.onFailure ?? 'fail-parent' } as const;
  return { job, ready: await settleParents(c, t, [{ ...child, end: 'cancelled', error: job.error }], now) };
}
