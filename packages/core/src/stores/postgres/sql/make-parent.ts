/**
 * For a flow whose root carries an idempotency key (inserted on its own by `insertJobs`, in the same
 * transaction): $1 the root's id, $2 its direct children. Makes it `waiting-children` on them.
 */
export function makeParentSql(schema: string): string {
  return `UPDATE ${schema}.jobs AS j SET state = 'waiting-children', pending_children = $2::int, child_count = $2::int
WHERE j.id = $1`;
}
