/**
 * List held children: `FlowStore.listHeldChildren`, one `SELECT`. The held job (by its primary key, fenced: its
 * lease holds at `now`) joined to its direct children through the `children` index, in enqueue order (by id),
 * after `afterId` when given, at most `limit` and, with `maxBytes`, up to the child whose result and error bring
 * the page to it, each with only the fields a parent's handler reads. The page is chosen over the children's ids
 * and sizes (`childrenPageIdsSql`), so no result past it is copied, and one child past it is read to tell whether
 * more follow. No row when the lease does not hold; one row with no child when the page is empty. Takes no locks.
 */
import type { ChildrenPageQuery, HeldChildrenPage, LeaseRef } from '../../../engine/store.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { childOutcomeRow, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { childBytesSql, childrenPageIdsSql } from './list-children.ts';

export async function listHeldChildren(
  db: Queryable,
  t: Tables,
  lease: LeaseRef,
  page: ChildrenPageQuery,
  now: Date,
): Promise<HeldChildrenPage | null> {
  const limit = Math.max(0, Math.floor(page.limit));
  const bytes = page.maxBytes === undefined ? '0' : childBytesSql('k', ['result', 'error']);
  const ids = childrenPageIdsSql(t, bytes, { after: page.afterId !== undefined, cut: page.maxBytes !== undefined });
  // The held row is there with no child when the page is empty, and no row at all when the lease does not hold.
  const found = await selectRows(
    db,
    `SELECT p.id AS held, c.id, c.name, c.state, c.run_at, c.result, c.error, c.child_count, paged.followed
       FROM ${t.jobs} AS p
       LEFT JOIN (${ids}) AS paged ON TRUE
       LEFT JOIN ${t.jobs} AS c ON c.id = paged.id
       WHERE p.id = ? AND p.lease_token = ? AND p.state = 'active' AND p.lease_expires_at > ?
       ORDER BY c.id`,
    [
      lease.id,
      ...(page.afterId === undefined ? [] : [page.afterId]),
      limit + 1,
      limit,
      ...(page.maxBytes === undefined ? [] : [Math.max(1, Math.floor(page.maxBytes))]),
      lease.id,
      lease.leaseToken,
      sqlDate(now),
    ],
  );
  if (found.length === 0) return null;
  const children = found.filter((row) => row.id !== null);
  return { children: children.map(childOutcomeRow), more: Number(children.at(-1)?.followed ?? 0) === 1 };
}
