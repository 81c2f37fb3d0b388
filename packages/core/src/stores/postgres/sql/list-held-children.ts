import { childBytesSql, childrenPageSql } from './list-children.ts';

/**
 * `FlowStore.listHeldChildren`, one statement: $1 the held job's id, $2 its lease token, $3 now, $4 after this
 * child id or null, $5 limit, $6 the page's bytes or null. No row when the lease does not hold the job at $3;
 * otherwise one row per child of the page, in enqueue order (by id, through `jobs_children_idx`), with only the
 * fields a parent's handler reads and whether a child follows it (`followed`), or one row of nulls (`held` set)
 * when the page is empty. One child past the limit is read to tell whether more follow. Takes no locks.
 */
export function listHeldChildrenSql(schema: string): string {
  const rows = `SELECT k.id, k.name, k.state, k.run_at, k.result, k.error, k.child_count,
    ${childBytesSql('k', ['result', 'error'], '$6')} AS bytes
  FROM ${schema}.jobs AS k
  WHERE k.parent_id = $1 AND ($4::text IS NULL OR k.id > $4)
  ORDER BY k.id
  LIMIT $5::int + 1`;
  return `SELECT true AS held, c.id, c.name, c.state, c.run_at, c.result, c.error, c.child_count, c.followed
FROM ${schema}.jobs AS p
LEFT JOIN LATERAL (${childrenPageSql(rows, '$6')} AND w.rn <= $5::int) AS c ON true
WHERE p.id = $1 AND p.lease_token = $2 AND p.state = 'active' AND p.lease_expires_at > $3::timestamptz
ORDER BY c.id`;
}
