import type { JobRead } from '../../../engine/store.ts';
import { childSizeColumns } from '../../shared/flow-records.ts';
import { jobColumnsFor } from '../records.ts';

/**
 * `rows`, a subquery of one parent's children in id order with each one's `bytes`, as a page: the rows up to
 * and including the first whose running total of `bytes` reaches `maxBytes` (a parameter; `NULL`: no cut), each
 * also saying whether a row of `rows` follows it (`followed`), and its place (`rn`, from 1).
 */
export function childrenPageSql(rows: string, maxBytes: string): string {
  return `SELECT w.* FROM (
  SELECT r.*, sum(r.bytes) OVER o - r.bytes AS bytes_before, row_number() OVER o AS rn,
    lead(r.id) OVER o IS NOT NULL AS followed
  FROM (${rows}) AS r
  WINDOW o AS (ORDER BY r.id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
) AS w
WHERE (${maxBytes}::bigint IS NULL OR w.bytes_before < ${maxBytes}::bigint)`;
}

/** The size of `columns` of `alias` as `FlowStore`'s pages count it (their JSON text); 0 when `maxBytes` is `NULL`. */
export function childBytesSql(alias: string, columns: readonly string[], maxBytes: string): string {
  const sizes = columns.map((column) => `coalesce(octet_length(${alias}.${column}::text), 0)`).join(' + ');
  return `CASE WHEN ${maxBytes}::bigint IS NULL THEN 0 ELSE ${sizes} END`;
}

/**
 * $1 parent id, $2 after this id or null, $3 limit: the parent's children in enqueue order (by id), read through
 * `jobs_children_idx`; each payload left unread (`NULL`) with `read.withoutPayload`.
 */
export function listChildrenSql(schema: string, read: JobRead = {}): string {
  return `SELECT ${jobColumnsFor(read)} FROM ${schema}.jobs AS j
WHERE j.parent_id = $1 AND ($2::text IS NULL OR j.id > $2)
ORDER BY j.id
LIMIT $3::int`;
}

/** `listChildrenSql` with $4, the page's bytes: the page cut as `childrenPageSql` cuts. */
export function listChildrenByBytesSql(schema: string, read: JobRead = {}): string {
  const rows = `SELECT k.*, ${childBytesSql('k', childSizeColumns(read), '$4')} AS bytes
  FROM ${schema}.jobs AS k
  WHERE k.parent_id = $1 AND ($2::text IS NULL OR k.id > $2)
  ORDER BY k.id
  LIMIT $3::int`;
  return `SELECT ${jobColumnsFor(read)} FROM (${childrenPageSql(rows, '$4')}) AS j
ORDER BY j.id`;
}

/** $1 parent id, $2 after this id or null, $3 limit: `listChildrenSql`'s children, each with only its `ChildState`. */
export function listChildStatesSql(schema: string): string {
  return `SELECT j.id, j.name, j.state, j.run_at FROM ${schema}.jobs AS j
WHERE j.parent_id = $1 AND ($2::text IS NULL OR j.id > $2)
ORDER BY j.id
LIMIT $3::int`;
}
