/**
 * Wait for children: `FlowStore.waitForChildren`, in one transaction (the caller's). One fenced `UPDATE` ends
 * the held job's attempt uncounted (`attempts` down by one, no error) and its lease (token, expiry, worker
 * cleared), and makes it `waiting-children` on its direct children in `children`, `child_count` up by as
 * many; then the children are inserted (insert-flow.ts), a taken id failing it all.
 *
 * Returns whether the lease held; when it did not, nothing changed and nothing was inserted.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { LeaseRef, NewJob } from '../../../engine/store.ts';
import { directChildren } from '../../shared/flow-records.ts';
import { execute } from '../connection.ts';
import { FENCE, fenceValues, RELEASE_LEASE } from '../job-queries.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { insertRows } from './insert-flow.ts';

export async function waitForChildren(
  c: PoolConnection,
  t: Tables,
  lease: LeaseRef,
  children: readonly NewJob[],
  now: Date,
): Promise<boolean> {
  const direct = directChildren(children, lease.id);
  const parked = await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'waiting-children', attempts = attempts - 1, ${RELEASE_LEASE}, worker_id = NULL,
         pending_children = ?, child_count = child_count + ?, updated_at = ?
       WHERE ${FENCE}`,
    [direct, direct, sqlDate(now), ...fenceValues(lease, now)],
  );
  if (parked.affectedRows === 0) return false;
  await insertRows(c, t, children);
  return true;
}
