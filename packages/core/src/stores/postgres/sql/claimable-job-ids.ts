/**
 * `claimable_job_ids(job_name, due_by, min_version, max_version, max_jobs)`: the ids of up to `max_jobs` waiting
 * jobs of `job_name`, due by `due_by`, of a version in `[min_version, max_version]`, in claim order (priority
 * descending, then `order_key`, `order_tie`: fifo or lifo).
 *
 * Locks: each row it returns, `FOR UPDATE SKIP LOCKED`, so concurrent claims never return the same job and
 * never wait for each other. Changes nothing; the caller leases the ids (`claim_jobs`).
 *
 * Planned with sorts and bitmap scans off: a queue fills and drains faster than statistics follow, and on an
 * estimate of a handful of ready rows the planner would read every ready job through a bitmap and sort them,
 * at a cost as long as the queue. The only plan left is the ordered walk of `jobs_claim_idx`, stopping after
 * `max_jobs` rows. Declared to return one row, so the claim that calls it looks its jobs up by primary key.
 */
export const CLAIMABLE_JOB_IDS = `
CREATE FUNCTION claimable_job_ids(job_name text, due_by timestamptz, min_version integer, max_version integer, max_jobs integer)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_sort = off SET enable_bitmapscan = off SET search_path FROM CURRENT
AS $body$ BEGIN
  RETURN QUERY SELECT c.id FROM jobs AS c
  WHERE c.state = 'waiting' AND c.name = job_name AND c.run_at <= due_by AND c.version BETWEEN min_version AND max_version
  ORDER BY c.priority DESC, c.order_key, c.order_tie
  LIMIT max_jobs
  FOR UPDATE SKIP LOCKED; END $body$`;
