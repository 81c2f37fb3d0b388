import { appendedErrorsSql } from '../error-history.ts';
import { notStartedSql, orderKeySql } from '../sql-fragments.ts';
import { UNFINISHED_SQL } from './settle-parents.ts';

/**
 * `fail_job(job_id, token, retry_at, failure, at)`: `Store.failJob`. Fenced (`job_id` held by `token` at `at`):
 * records `failure` (JSON text) as the last error, appended to `errors`, and ends the lease; the job waits again
 * at `retry_at` (its order key following), or with `retry_at` null goes dead, and a dead child settles its
 * parent in the same transaction (`settle_parents`). Returns the id when the lease held, else nothing.
 * Locks: the job's row (and a dead child's parent).
 */
export const FAIL_JOB = `
CREATE FUNCTION fail_job(job_id text, token text, retry_at timestamptz, failure text, done_at timestamptz)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $body$ DECLARE failed record; BEGIN
  UPDATE jobs AS j
  SET state = CASE WHEN retry_at IS NULL THEN 'dead' ELSE ${notStartedSql('retry_at', 'done_at')} END,
    run_at = coalesce(retry_at, j.run_at),
    order_key = CASE WHEN retry_at IS NULL THEN j.order_key ELSE ${orderKeySql('j.job_order', 'retry_at')} END,
    error = failure::jsonb, errors = ${appendedErrorsSql('failure::jsonb')}, lease_token = NULL, lease_expires_at = NULL,
    finished_at = CASE WHEN retry_at IS NULL THEN done_at END, updated_at = done_at
  WHERE j.id = job_id AND j.lease_token = token AND j.lease_expires_at > done_at
  RETURNING j.id, j.parent_id INTO failed;
  IF NOT FOUND THEN RETURN; END IF;
  IF retry_at IS NULL AND failed.parent_id IS NOT NULL THEN PERFORM settle_parents(ARRAY[job_id], done_at); END IF;
  RETURN NEXT failed.id; END $body$`;

/**
 * `cancel_job(job_id, at)`: `Store.cancelJob`. A job not finished is cancelled (its lease ended); with children,
 * its unfinished descendants too (`cancel_flow_descendants`); as a child, it settles its parent
 * (`settle_parents`), all in one transaction. Returns the cancelled row, or nothing when the job is unknown or
 * finished. Locks: the job's row, its parent's, and the descendants it cancels.
 */
export const CANCEL_JOB = `
CREATE FUNCTION cancel_job(job_id text, done_at timestamptz)
RETURNS SETOF jobs LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $body$ DECLARE cancelled jobs; BEGIN
  UPDATE jobs AS j
  SET state = 'cancelled', lease_token = NULL, lease_expires_at = NULL, finished_at = done_at, updated_at = done_at
  WHERE j.id = job_id AND j.state IN ${UNFINISHED_SQL}
  RETURNING j.* INTO cancelled;
  IF NOT FOUND THEN RETURN; END IF;
  IF cancelled.child_count > 0 THEN PERFORM cancel_flow_descendants(ARRAY[job_id], done_at); END IF;
  IF cancelled.parent_id IS NOT NULL THEN PERFORM settle_parents(ARRAY[job_id], done_at); END IF;
  RETURN NEXT cancelled; END $body$`;

/**
 * The sweep's statement on `table`, at `now`, recording `failure` (JSON text; SQL expressions): active jobs whose
 * lease expired (`SKIP LOCKED`: a job being acked is the ack's) lose it, waiting again in their place, or dead
 * with no attempt left, the lost lease recorded with its attempt; `timedOut` (JSON text) instead where the lease
 * ran out at the attempt's deadline (`attempt_deadline`, a time limit). Returns each swept job's id, name,
 * version, attempts, whether it went dead, its parent, and whether it timed out. `requeue_expired_leases` runs it; on its own, it is what a
 * test explains.
 */
export function sweptLeasesSql(table: string, now: string, failure: string, timedOut: string): string {
  const recorded = `CASE WHEN expired.timed_out THEN ${timedOut} ELSE ${failure} END`;
  const error = `jsonb_set((${recorded})::jsonb, '{attempt}', to_jsonb(j.attempts))`;
  return `WITH expired AS (
    SELECT e.id, (e.lease_expires_at >= e.attempt_deadline) IS TRUE AS timed_out
    FROM ${table} AS e WHERE e.state = 'active' AND e.lease_expires_at <= ${now} FOR UPDATE SKIP LOCKED),
  requeued AS (
    UPDATE ${table} AS j
    SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'waiting' END,
      finished_at = CASE WHEN j.attempts >= j.max_attempts THEN ${now} END,
      error = ${error}, errors = ${appendedErrorsSql(error)}, lease_token = NULL, lease_expires_at = NULL, updated_at = ${now}
    FROM expired WHERE j.id = expired.id
    RETURNING j.id, j.name, j.version, j.attempts, j.state = 'dead' AS dead, j.parent_id, expired.timed_out)
  SELECT r.id, r.name, r.version, r.attempts, r.dead, r.parent_id, r.timed_out FROM requeued AS r`;
}

/**
 * `requeue_expired_leases(done_at, failure, timeout_failure)`: `Store.requeueExpiredLeases`, the sweep
 * (`sweptLeasesSql`) and, in the same transaction, the parents of the children it made dead settled
 * (`settle_parents`). Returns each swept job: id, name, version, attempt, whether it went dead, its parent,
 * and whether its lease ran out at the attempt's deadline.
 */
export const REQUEUE_EXPIRED_LEASES = `
CREATE FUNCTION requeue_expired_leases(done_at timestamptz, failure text, timeout_failure text)
RETURNS TABLE (id text, name text, version integer, attempts integer, dead boolean, parent_id text, timed_out boolean)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $body$ #variable_conflict use_column
DECLARE swept record; ids text[] := '{}'; names text[] := '{}'; versions integer[] := '{}';
  attempt_counts integer[] := '{}'; deads boolean[] := '{}'; parents text[] := '{}'; ended text[] := '{}';
  timeouts boolean[] := '{}'; BEGIN
  FOR swept IN ${sweptLeasesSql('jobs', 'done_at', 'failure', 'timeout_failure')} LOOP
    ids := ids || swept.id; names := names || swept.name::text; versions := versions || swept.version;
    attempt_counts := attempt_counts || swept.attempts; deads := deads || swept.dead; parents := parents || swept.parent_id;
    timeouts := timeouts || swept.timed_out;
    IF swept.dead AND swept.parent_id IS NOT NULL THEN ended := ended || swept.id; END IF;
  END LOOP;
  IF cardinality(ended) > 0 THEN PERFORM settle_parents(ended, done_at); END IF;
  RETURN QUERY SELECT * FROM unnest(ids, names, versions, attempt_counts, deads, parents, timeouts); END $body$`;

/**
 * `retry_dead_jobs(job_name, job_ids, at)`: `Store.retryDeadJobs`. Dead jobs (of `job_name`, or among `job_ids`;
 * null: any) go back to waiting at `at` with attempts reset; the parents dead of them revive in the same
 * transaction (`revive_parents`). Returns how many jobs it retried.
 */
export const RETRY_DEAD_JOBS = `
CREATE FUNCTION retry_dead_jobs(job_name text, job_ids text[], done_at timestamptz)
RETURNS integer LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $body$ DECLARE retried integer; children text[]; BEGIN
  WITH revived AS (
    UPDATE jobs AS j
    SET state = 'waiting', attempts = 0, run_at = done_at, order_key = ${orderKeySql('j.job_order', 'done_at')},
      finished_at = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = done_at
    WHERE j.state = 'dead' AND (job_name IS NULL OR j.name = job_name) AND (job_ids IS NULL OR j.id = ANY(job_ids))
    RETURNING j.id, j.parent_id)
  SELECT count(*)::int, array_agg(r.id) FILTER (WHERE r.parent_id IS NOT NULL) INTO retried, children FROM revived AS r;
  IF children IS NOT NULL THEN PERFORM revive_parents(children, done_at); END IF;
  RETURN retried; END $body$`;
