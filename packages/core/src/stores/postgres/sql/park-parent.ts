/**
 * The first statement of `waitForChildren` (in its transaction, before its children's insert): $1 id, $2 lease
 * token, $3 now, $4 the number of its direct children. Fenced (the lease holds at $3): the held job's attempt
 * ends uncounted (`attempts` down by one, no error), its lease ends, and it is `waiting-children` on $4 children,
 * `child_count` up by as many; its run time and order key stay, so it resumes in its place. Returns the id when
 * the lease held. Locks: the job's row.
 */
export function parkParentSql(schema: string): string {
  return `UPDATE ${schema}.jobs AS j
SET state = 'waiting-children', attempts = j.attempts - 1, lease_token = NULL, lease_expires_at = NULL, worker_id = NULL,
  pending_children = $4::int, child_count = j.child_count + $4::int, updated_at = $3::timestamptz
WHERE j.id = $1 AND j.lease_token = $2 AND j.lease_expires_at > $3::timestamptz
RETURNING j.id`;
}
