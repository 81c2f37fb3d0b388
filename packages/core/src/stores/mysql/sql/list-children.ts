/**
 * List children: `FlowStore.listChildren`, one `SELECT` through the `children` index: the direct children of
 * one parent, in enqueue order (by id), after `afterId` when given, at most `limit`, and with `maxBytes` cut
 * after the child whose payload, result, error and error history bring the page to it. Takes no locks.
 */
import type { ChildrenPageQuery, ChildState, JobRecord } from '../../../engine/store.ts';
import { childSizeColumns } from '../../shared/flow-records.ts';
import { CHILDREN_INDEX } from '../baseline.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { childStateRow, jobRow, jobSelectFor, jobSelectOf } from '../records.ts';
import type { Tables } from '../tables.ts';

/** The size of `columns` of `alias` as `FlowStore`'s pages count it: the bytes of their JSON text. */
export function childBytesSql(alias: string, columns: readonly string[]): string {
  return columns.map((column) => `COALESCE(LENGTH(${alias}.${column}), 0)`).join(' + ');
}

/**
 * The ids of a page of one parent's children, chosen over their ids and sizes alone (`bytes`, an expression over
 * the child `k`, e.g. `childBytesSql`'s) so that no child past the page has its row copied. Parameters, in
 * order: the parent id; the id to read after, when `after`; the rows to read, the page's `limit` or one more
 * to tell whether a child follows; the `limit`; and the page's bytes, when `cut`, which end it at the child whose
 * running total reaches them. Each row: `id`, and whether a child follows it (`followed`). Window functions:
 * MariaDB 10.2 and MySQL 8.
 */
export function childrenPageIdsSql(t: Tables, bytes: string, page: { after: boolean; cut: boolean }): string {
  return `SELECT w.id, w.followed FROM (
    SELECT r.id, LEAD(r.id) OVER (ORDER BY r.id) IS NOT NULL AS followed, ROW_NUMBER() OVER (ORDER BY r.id) AS rn,
      SUM(r.bytes) OVER (ORDER BY r.id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - r.bytes AS bytes_before
    FROM (SELECT k.id, ${bytes} AS bytes FROM ${t.jobs} AS k FORCE INDEX (${CHILDREN_INDEX})
      WHERE k.parent_id = ? ${page.after ? 'AND k.id > ?' : ''} ORDER BY k.id LIMIT ?) AS r
  ) AS w WHERE w.rn <= ? ${page.cut ? 'AND w.bytes_before < ?' : ''}`;
}

export async function listChildren(
  db: Queryable,
  t: Tables,
  parentId: string,
  page: ChildrenPageQuery,
): Promise<JobRecord[]> {
  const after = page.afterId === undefined ? [] : [page.afterId];
  const limit = Math.max(0, Math.floor(page.limit));
  if (page.maxBytes === undefined) {
    const rows = `SELECT ${jobSelectFor(page)} FROM ${t.jobs} FORCE INDEX (${CHILDREN_INDEX})
       WHERE parent_id = ? ${after.length > 0 ? 'AND id > ?' : ''} ORDER BY id LIMIT ?`;
    return (await selectRows(db, rows, [parentId, ...after, limit])).map(jobRow);
  }
  const ids = childrenPageIdsSql(t, childBytesSql('k', childSizeColumns(page)), { after: after.length > 0, cut: true });
  const paged = `SELECT ${jobSelectOf('c', page)} FROM (${ids}) AS paged JOIN ${t.jobs} AS c ON c.id = paged.id ORDER BY c.id`;
  return (await selectRows(db, paged, [parentId, ...after, limit, limit, Math.max(1, Math.floor(page.maxBytes))])).map(
    jobRow,
  );
}

/** `FlowStore.listChildStates`: `listChildren`'s children, each with only its `ChildState`. */
export async function listChildStates(
  db: Queryable,
  t: Tables,
  parentId: string,
  page: { afterId?: string; limit: number },
): Promise<ChildState[]> {
  const after = page.afterId === undefined ? '' : 'AND id > ?';
  const rows = await selectRows(
    db,
    `SELECT id, name, state, run_at FROM ${t.jobs} FORCE INDEX (${CHILDREN_INDEX})
       WHERE parent_id = ? ${after} ORDER BY id LIMIT ?`,
    [parentId, ...(page.afterId === undefined ? [] : [page.afterId]), Math.max(0, Math.floor(page.limit))],
  );
  return rows.map(childStateRow);
}
