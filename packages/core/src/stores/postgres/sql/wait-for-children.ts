import { FLOW_JOB_COLUMNS, FLOW_JOB_VALUES, FLOW_JOBS } from './insert-flow-jobs.ts';

/**
 * `FlowStore.waitForChildren` in one statement, so atomic without a transaction: $1…$18 the children as
 * `insertFlowJobsSql` takes them; $19 the held job's id, $20 its lease token, $21 now, $22 the number of its
 * direct children. Fenced (the lease holds at $21): the held job's attempt ends uncounted (`attempts` down by
 * one, no error), its lease ends, and it is `waiting-children` on $22 children, `child_count` up by as many; its
 * run time and order key stay, so it resumes in its place. The children go in only with the parking. Returns
 * one row, `parked`: whether the lease held (when it did not, nothing changed). A taken id fails the
 * statement, and nothing changes. Locks: the held job's row and the rows it inserts.
 */
export function waitForChildrenSql(schema: string): string {
  return `WITH parked AS (
  UPDATE ${schema}.jobs AS j
  SET state = 'waiting-children', attempts = j.attempts - 1, lease_token = NULL, lease_expires_at = NULL,
    worker_id = NULL, pending_children = $22::int, child_count = j.child_count + $22::int, updated_at = $21::timestamptz
  WHERE j.id = $19 AND j.lease_token = $20 AND j.lease_expires_at > $21::timestamptz
  RETURNING j.id
), below AS (
  INSERT INTO ${schema}.jobs (${FLOW_JOB_COLUMNS})
  SELECT ${FLOW_JOB_VALUES} FROM ${FLOW_JOBS} WHERE EXISTS (SELECT 1 FROM parked)
)
SELECT EXISTS (SELECT 1 FROM parked) AS parked`;
}
