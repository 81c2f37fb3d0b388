import { FLOW_JOB_COLUMNS, FLOW_JOB_VALUES, FLOW_JOBS } from './insert-flow-jobs.ts';

/**
 * `FlowStore.waitForChildren` in one statement, so atomic without a transaction: $1…$17 the children as
 * `insertFlowJobsSql` takes them; $18 the held job's id, $19 its lease token, $20 now, $21 the number of its
 * direct children. Fenced (the lease holds at $20): the held job's attempt ends uncounted (`attempts` down by
 * one, no error), its lease ends, and it is `waiting-children` on $21 children, `child_count` up by as many; its
 * run time and order key stay, so it resumes in its place. The children go in only with the parking. Returns
 * one row, `parked`: whether the lease held (when it did not, nothing changed). A taken id fails the
 * statement, and nothing changes. Locks: the held job's row and the rows it inserts.
 */
export function waitForChildrenSql(schema: string): string {
  return `WITH parked AS (
  UPDATE ${schema}.jobs AS j
  SET state = 'waiting-children', attempts = j.attempts - 1, lease_token = NULL, lease_expires_at = NULL,
    worker_id = NULL, pending_children = $21::int, child_count = j.child_count + $21::int, updated_at = $20::timestamptz
  WHERE j.id = $18 AND j.lease_token = $19 AND j.lease_expires_at > $20::timestamptz
  RETURNING j.id
), below AS (
  INSERT INTO ${schema}.jobs (${FLOW_JOB_COLUMNS})
  SELECT ${FLOW_JOB_VALUES} FROM ${FLOW_JOBS} WHERE EXISTS (SELECT 1 FROM parked)
)
SELECT EXISTS (SELECT 1 FROM parked) AS parked`;
}
