/**
 * `complete_jobs(job_ids, lease_tokens, results, done_at)`: completes a batch of acks, the three arrays parallel
 * (`results` as JSON text), and returns the ids it completed: those still held at `done_at` by the lease token
 * given (the fencing condition, `fenced` in statements.ts, written out for a batch). A completed job keeps
 * its lease token, so an ack sent again is recognised as applied; its lease expiry is cleared.
 *
 * A completed child settles its parent in the same transaction: the update returns each job's parent, and each
 * parent counts its completed children down (`count_down_parents`) without reading them again, as
 * `settle_parents` would (a completion fails no parent); a batch of jobs without a parent only gathers their ids,
 * as it returns them.
 *
 * Locks: the rows it updates (and a completed child's parent). Acks whose lease is gone change nothing.
 *
 * Planned with sequential scans, bitmaps, hash and merge joins off and a generic plan: left to stale
 * statistics, the join of the batch with its jobs compared every ack with every job. The only plan left takes
 * the batch's rows in turn, each looking its job up by primary key.
 */
export const COMPLETE_JOBS = `
CREATE FUNCTION complete_jobs(job_ids text[], lease_tokens text[], results text[], done_at timestamptz)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE ROWS 100
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET search_path FROM CURRENT
AS $body$ DECLARE completed text[]; parents text[]; counts integer[]; BEGIN
  WITH done AS (UPDATE jobs AS j
    SET state = 'completed', result = u.result::jsonb, lease_expires_at = NULL, finished_at = done_at, updated_at = done_at
    FROM unnest(job_ids, lease_tokens, results) AS u(id, lease_token, result)
    WHERE j.id = u.id AND j.lease_token = u.lease_token AND j.lease_expires_at > done_at
    RETURNING j.id, j.parent_id)
  SELECT (SELECT array_agg(d.id) FROM done AS d), e.parents, e.counts INTO completed, parents, counts
  FROM (SELECT array_agg(g.parent_id ORDER BY g.parent_id) AS parents, array_agg(g.n ORDER BY g.parent_id) AS counts
    FROM (SELECT d.parent_id, count(*)::int AS n FROM done AS d WHERE d.parent_id IS NOT NULL GROUP BY d.parent_id) AS g) AS e;
  IF parents IS NOT NULL THEN PERFORM count_down_parents(parents, counts, done_at); END IF;
  RETURN QUERY SELECT unnest(completed); END $body$`;
