/**
 * `claim_jobs_unless_held(job_name, due_by, min_version, max_version, max_jobs, new_lease_token, new_worker_id,
 * lease_ms_override)`: `claim_jobs`, unless the type's `queue_settings` row holds its claims back (paused, a limit
 * set, grouped, or held past `due_by`). Then it leases nothing and returns one row of NULLs (no `id`): the caller claims the type
 * under its limits (`claim_under_limits`) instead. Otherwise it returns what `claim_jobs` returns.
 *
 * Reads the settings row by primary key, without locking it, in the statement that calls it: a change
 * committed before that statement began holds for it, whatever a server remembers of the settings. A function,
 * so that the look-up runs on a cached plan rather than adding a relation to the caller's statement to plan.
 * Locks: those of `claim_jobs`, only when it runs.
 */
export const CLAIM_JOBS_UNLESS_HELD = `
CREATE FUNCTION claim_jobs_unless_held(job_name text, due_by timestamptz, min_version integer, max_version integer,
  max_jobs integer, new_lease_token text, new_worker_id text, lease_ms_override bigint)
RETURNS SETOF jobs LANGUAGE plpgsql VOLATILE ROWS 100
SET search_path FROM CURRENT
AS $body$ BEGIN
  IF EXISTS (SELECT 1 FROM queue_settings AS q WHERE q.name = job_name AND (q.paused OR q.grouped
    OR q.concurrency IS NOT NULL OR q.rate_max IS NOT NULL OR q.group_concurrency IS NOT NULL
    OR q.held_until > due_by)) THEN
    RETURN NEXT NULL::jobs;
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM claim_jobs(job_name, due_by, min_version, max_version, max_jobs, new_lease_token,
    new_worker_id, lease_ms_override); END $body$`;
