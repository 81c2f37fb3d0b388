/**
 * List held children: `FlowStore.listHeldChildren`, one `SELECT`. The held job (by its primary key, fenced: its
 * lease holds at `now`) joined to its direct children through the `children` index, in enqueue order (by id),
 * after `afterId` when given, at most `limit`, each with only the fields a parent's handler reads. No row when the
 * lease does not hold; one row with no child when the page is empty. Takes no locks.
 */
import type { ChildOutcome, LeaseRef } from '../../../engine/store.ts';
import { CHILDREN_INDEX } from '../baseline.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { childOutcomeRow, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function listHeldChildren(
  db: Queryable,
  t: Tables,
  lease: LeaseRef,
  page: { afterId?: string; limit: number },
  now: Date,
): Promise<ChildOutcome[] | null> {
  const after = page.afterId === undefined ? '' : 'AND c.id > ?';
  const rows = await selectRows(
    db,
    `SELECT p.id AS held, c.id, c.name, c.state, c.run_at, c.result, c.error, c.child_count
       FROM ${t.jobs} AS p
       LEFT JOIN ${t.jobs} AS c FORCE INDEX (${CHILDREN_INDEX}) ON c.parent_id = p.id ${after}
       WHERE p.id = ? AND p.lease_token = ? AND p.state = 'active' AND p.lease_expires_at > ?
       ORDER BY c.id LIMIT ?`,
    [
      ...(page.afterId === undefined ? [] : [page.afterId]),
      lease.id,
      lease.leaseToken,
      sqlDate(now),
      Math.max(1, Math.floor(page.limit)),
    ],
  );
  if (rows.length === 0) return null;
  // A page of 0 still reads the fence: LIMIT 1 keeps the held row, and the slice drops its child.
  return rows
    .filter((row) => row.id !== null)
    .slice(0, Math.max(0, Math.floor(page.limit)))
    .map(childOutcomeRow);
}
