import { JOB_COLUMNS } from './records.ts';
import { NOT_STARTED_SQL, notStartedSql, orderKeySql } from './sql-fragments.ts';

/** A job outside flows: no parent, no children. */
const OUTSIDE_FLOWS = 'j.parent_id IS NULL AND j.child_count = 0';

/**
 * The operator's moves on one job that no worker holds (`AdminStore`), each one statement whose condition is
 * the state it leaves: a claim, an ack or another operator's move at the same moment either ran first, and
 * the row no longer matches, or runs after on the row this one wrote. Built once per schema, like
 * `buildStatements`.
 */
export function buildAdminStatements(quotedSchema: string) {
  const jobs = `${quotedSchema}.jobs`;
  return {
    /** $1 id, $2 now: a completed job outside flows waits again, due now, with nothing of its last run kept. */
    rerunCompletedJob: `UPDATE ${jobs} AS j
SET state = 'waiting', attempts = 0, run_at = $2::timestamptz, order_key = ${orderKeySql('j.job_order', '$2::timestamptz')},
  result = NULL, error = NULL, progress = 0, moved_to = NULL, finished_at = NULL, lease_token = NULL,
  lease_expires_at = NULL, worker_id = NULL, updated_at = $2::timestamptz
WHERE j.id = $1 AND j.state = 'completed' AND ${OUTSIDE_FLOWS}
RETURNING ${JOB_COLUMNS}`,

    /** $1 id, $2 now: a cancelled job that never started, outside flows, waits again at its own run time. */
    restoreCancelledJob: `UPDATE ${jobs} AS j
SET state = ${notStartedSql('j.run_at', '$2::timestamptz')}, finished_at = NULL, updated_at = $2::timestamptz
WHERE j.id = $1 AND j.state = 'cancelled' AND j.attempts = 0 AND ${OUTSIDE_FLOWS}
RETURNING ${JOB_COLUMNS}`,

    /** $1 name, $2 idempotency key: deletes its holder when it has not started and is outside flows. */
    removeJobByKey: `DELETE FROM ${jobs} AS j
WHERE j.name = $1 AND j.idempotency_key = $2 AND j.state IN ${NOT_STARTED_SQL} AND ${OUTSIDE_FLOWS}
RETURNING ${JOB_COLUMNS}`,
  };
}
