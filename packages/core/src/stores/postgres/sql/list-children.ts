import { JOB_COLUMNS } from '../records.ts';

/**
 * $1 parent id, $2 after this id or null, $3 limit: the parent's children in enqueue order (by id), read through
 * `jobs_children_idx`.
 */
export function listChildrenSql(schema: string): string {
  return `SELECT ${JOB_COLUMNS} FROM ${schema}.jobs AS j
WHERE j.parent_id = $1 AND ($2::text IS NULL OR j.id > $2)
ORDER BY j.id
LIMIT $3::int`;
}
