/**
 * List children: `FlowStore.listChildren`, one `SELECT` through the `children` index: the direct children of
 * one parent, in enqueue order (by id), after `afterId` when given, at most `limit`, and with `maxBytes` cut
 * after the child whose payload, result, error and error history bring the page to it. Takes no locks.
 */
import type { ChildrenPageQuery, ChildState, JobRecord } from '../../../engine/store.ts';
import { CHILDREN_INDEX } from '../baseline.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { childStateRow, JOB_SELECT, jobRow } from '../records.ts';
import type { Tables } from '../tables.ts';

/** The size of `columns` of `alias` as `FlowStore`'s pages count it: the bytes of their JSON text. */
export function childBytesSql(alias: string, columns: readonly string[]): string {
  return columns.map((column) => `COALESCE(LENGTH(${alias}.${column}), 0)`).join(' + ');
}

/**
 * `rows`, a derived table of one parent's children in id order with each one's `bytes`, with each row's running
 * total before it (`bytes_before`), its place (`rn`, from 1) and whether a row of `rows` follows it
 * (`followed`): a page keeps the rows whose `bytes_before` is below its `maxBytes`.
 */
export function childrenWindowSql(rows: string): string {
  return `SELECT r.*,
    SUM(r.bytes) OVER (ORDER BY r.id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - r.bytes AS bytes_before,
    ROW_NUMBER() OVER (ORDER BY r.id) AS rn,
    LEAD(r.id) OVER (ORDER BY r.id) IS NOT NULL AS followed
  FROM (${rows}) AS r`;
}

export async function listChildren(
  db: Queryable,
  t: Tables,
  parentId: string,
  page: ChildrenPageQuery,
): Promise<JobRecord[]> {
  const after = page.afterId === undefined ? '' : 'AND id > ?';
  const values = [parentId, ...(page.afterId === undefined ? [] : [page.afterId]), Math.max(0, Math.floor(page.limit))];
  const rows = `SELECT ${JOB_SELECT} FROM ${t.jobs} FORCE INDEX (${CHILDREN_INDEX})
       WHERE parent_id = ? ${after} ORDER BY id LIMIT ?`;
  if (page.maxBytes === undefined) return (await selectRows(db, rows, values)).map(jobRow);
  const sized = `SELECT k.*, ${childBytesSql('k', ['payload', 'result', 'error', 'errors'])} AS bytes
       FROM ${t.jobs} AS k FORCE INDEX (${CHILDREN_INDEX})
       WHERE k.parent_id = ? ${after && 'AND k.id > ?'} ORDER BY k.id LIMIT ?`;
  const paged = `SELECT ${JOB_SELECT} FROM (${childrenWindowSql(sized)}) AS w WHERE w.bytes_before < ? ORDER BY w.id`;
  return (await selectRows(db, paged, [...values, Math.max(1, Math.floor(page.maxBytes))])).map(jobRow);
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
