/**
 * List held children: `FlowStore.listHeldChildren`, one `SELECT`. The held job (by its primary key, fenced: its
 * lease holds at `now`) joined to its direct children through the `children` index, in enqueue order (by id),
 * after `afterId` when given, at most `limit` and, with `maxBytes`, up to the child whose result and error bring
 * the page to it, each with only the fields a parent's handler reads. One child past the page is read to tell
 * whether more follow. No row when the lease does not hold; one row with no child when the page is empty. Takes
 * no locks.
 */
import type { ChildrenPageQuery, HeldChildrenPage, LeaseRef } from '../../../engine/store.ts';
import { CHILDREN_INDEX } from '../baseline.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { childOutcomeRow, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { childBytesSql, childrenWindowSql } from './list-children.ts';

export async function listHeldChildren(
  db: Queryable,
  t: Tables,
  lease: LeaseRef,
  page: ChildrenPageQuery,
  now: Date,
): Promise<HeldChildrenPage | null> {
  const after = page.afterId === undefined ? '' : 'AND c.id > ?';
  // A page of 0 still reads the fence: the held row is kept with one child, and the slice drops the child.
  const limit = Math.max(0, Math.floor(page.limit));
  const bytes = page.maxBytes === undefined ? '0' : childBytesSql('c', ['result', 'error']);
  const rows = `SELECT p.id AS held, c.id, c.name, c.state, c.run_at, c.result, c.error, c.child_count,
         ${bytes} AS bytes
       FROM ${t.jobs} AS p
       LEFT JOIN ${t.jobs} AS c FORCE INDEX (${CHILDREN_INDEX}) ON c.parent_id = p.id ${after}
       WHERE p.id = ? AND p.lease_token = ? AND p.state = 'active' AND p.lease_expires_at > ?
       ORDER BY c.id LIMIT ?`;
  const cut = page.maxBytes === undefined ? '' : 'AND w.bytes_before < ?';
  const found = await selectRows(
    db,
    `SELECT w.* FROM (${childrenWindowSql(rows)}) AS w WHERE w.rn <= ? ${cut} ORDER BY w.id`,
    [
      ...(page.afterId === undefined ? [] : [page.afterId]),
      lease.id,
      lease.leaseToken,
      sqlDate(now),
      Math.max(1, limit) + 1,
      Math.max(1, limit),
      ...(page.maxBytes === undefined ? [] : [Math.max(1, Math.floor(page.maxBytes))]),
    ],
  );
  if (found.length === 0) return null;
  const children = found.filter((row) => row.id !== null).slice(0, limit);
  const more = limit > 0 && Number(children.at(-1)?.followed ?? 0) === 1;
  return { children: children.map(childOutcomeRow), more };
}
