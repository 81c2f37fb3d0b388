import type { Migration } from './migration.ts';

/** Migration 19: the limited claim's group lookups walk the group claim index whatever the statistics say. */
export const GROUP_CLAIM_MIGRATION: Migration = {
  version: 19,
  name: 'a grouped claim walks the group claim index, whatever the statistics say',
  // Migration 16's function, planned by the statistics of the moment. Those lag behind a queue whose jobs gained
  // groups since its last analysis, and PGlite never gathers them: estimating about one waiting job with a group,
  // the planner found the groups and their first jobs by walking the plain claim index, filtered by group, so each
  // lookup read the waiting jobs of every group ahead of its own in claim order. Planned with sorts, bitmaps and
  // sequential scans off, as migration 4's claim is, the only plans left walk the group claim index, each group's
  // range from its head: the groups are found in group order, which only that index gives, and a group's
  // candidates are bounded by a range on the group rather than `=` (which makes the group a constant that an order
  // need not follow), so that their order, by group and then claim order, is again one only that index gives. JIT
  // is off because a sort no plan can do without (of a handful of rows) still carries the disabled cost, which
  // would otherwise cross JIT's threshold. The lease finds its jobs by primary key alone: each was locked by this
  // claim's candidate lookup, which re-checked under the lock that it still waits, and a test of its state there
  // let the planner walk a claim index for the ids instead. The algorithm is unchanged.
  sql: `
CREATE OR REPLACE FUNCTION claim_limited_jobs(job_name text, due_by timestamptz, min_version integer, max_version integer, max_jobs integer,
new_lease_token text, new_worker_id text, lease_ms_override bigint)
RETURNS TABLE (claim_order integer, type_paused boolean, next_start_ms bigint, job jobs)
LANGUAGE plpgsql VOLATILE ROWS 100
SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off
SET search_path FROM CURRENT
AS $body$
DECLARE
s queue_settings;
now_ms bigint := (extract(epoch FROM due_by) * 1000)::bigint;
recent bigint[] := '{}';
room integer := max_jobs;
takes_turns boolean;
ready_count integer;
open_groups text[];
open_caps integer[];
batch_at integer := 0;
cand_ids text[] := '{}';
cand_ranks integer[] := '{}';
cand_places integer[] := '{}';
chosen text[];
leased jobs[];
leased_count integer;
in_window bigint[];
BEGIN
SELECT * INTO s FROM queue_settings AS q WHERE q.name = job_name FOR UPDATE;
IF NOT FOUND THEN
  RETURN QUERY SELECT NULL::integer, false, NULL::bigint, NULL::jobs
    UNION ALL SELECT (row_number() OVER (ORDER BY c.priority DESC, c.order_key, c.order_tie))::integer, false, NULL::bigint, c
    FROM claim_jobs(job_name, due_by, min_version, max_version, max_jobs, new_lease_token, new_worker_id, lease_ms_override) AS c;
  RETURN;
END IF;
IF s.paused THEN
  RETURN QUERY SELECT NULL::integer, true, NULL::bigint, NULL::jobs;
  RETURN;
END IF;
IF s.rate_max IS NOT NULL THEN
  recent := ARRAY(SELECT r FROM unnest(s.recent_starts) AS r WHERE r > now_ms - s.rate_per_ms ORDER BY r);
  room := least(room, greatest(0, s.rate_max - cardinality(recent)));
END IF;
IF s.concurrency IS NOT NULL AND room > 0 THEN
  room := least(room, s.concurrency - (SELECT count(*) FROM jobs AS a WHERE a.state = 'active' AND a.name = job_name)::integer);
END IF;
IF room <= 0 THEN
  RETURN QUERY SELECT NULL::integer, false,
    CASE WHEN s.rate_max IS NOT NULL AND cardinality(recent) >= s.rate_max
      THEN recent[cardinality(recent) - s.rate_max + 1] + s.rate_per_ms END, NULL::jobs;
  RETURN;
END IF;
takes_turns := s.grouped OR s.group_concurrency IS NOT NULL;
IF takes_turns THEN
  PERFORM count(*) FROM claim_jobs(job_name, due_by, min_version, max_version, 0, new_lease_token, new_worker_id, lease_ms_override);
  WITH RECURSIVE g(job_group) AS (
    (SELECT j.job_group FROM jobs AS j WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group IS NOT NULL
     ORDER BY j.job_group LIMIT 1)
    UNION ALL
    SELECT (SELECT j.job_group FROM jobs AS j WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group > g.job_group
            ORDER BY j.job_group LIMIT 1)
    FROM g WHERE g.job_group IS NOT NULL),
  busy AS (
    SELECT a.job_group, count(*)::integer AS n FROM jobs AS a
    WHERE s.group_concurrency IS NOT NULL AND a.state = 'active' AND a.name = job_name AND a.job_group IS NOT NULL
    GROUP BY a.job_group),
  capped AS (
    SELECT g.job_group, coalesce(t.last_turn, 0) AS turn,
      CASE WHEN s.group_concurrency IS NULL OR g.job_group = '' THEN room
        ELSE least(room, s.group_concurrency - coalesce(b.n, 0)) END AS cap
    FROM g LEFT JOIN queue_groups AS t ON t.name = job_name AND t.job_group = g.job_group
    LEFT JOIN busy AS b ON b.job_group = g.job_group
    WHERE g.job_group IS NOT NULL)
  SELECT count(*)::integer,
    coalesce(array_agg(c.job_group ORDER BY c.turn, c.job_group) FILTER (WHERE c.cap > 0), '{}'),
    coalesce(array_agg(c.cap ORDER BY c.turn, c.job_group) FILTER (WHERE c.cap > 0), '{}')
  INTO ready_count, open_groups, open_caps FROM capped AS c;
END IF;
IF NOT takes_turns OR ready_count = 0 THEN
  SELECT coalesce(array_agg(c ORDER BY c.priority DESC, c.order_key, c.order_tie), '{}') INTO leased
  FROM claim_jobs(job_name, due_by, min_version, max_version, room, new_lease_token, new_worker_id, lease_ms_override) AS c;
ELSE
  WHILE batch_at < cardinality(open_groups) AND cardinality(cand_ids) < room LOOP
    SELECT cand_ids || coalesce(array_agg(k.id), '{}'), cand_ranks || coalesce(array_agg(k.rank), '{}'),
      cand_places || coalesce(array_agg(o.place + batch_at), '{}')
    INTO cand_ids, cand_ranks, cand_places
    FROM unnest(open_groups[batch_at + 1 : batch_at + room], open_caps[batch_at + 1 : batch_at + room])
      WITH ORDINALITY AS o(job_group, cap, place)
    CROSS JOIN LATERAL (
      SELECT l.id, (row_number() OVER (ORDER BY l.job_group, l.priority DESC, l.order_key, l.order_tie))::integer AS rank
      FROM (SELECT j.id, j.job_group, j.priority, j.order_key, j.order_tie FROM jobs AS j
        WHERE j.state = 'waiting' AND j.name = job_name AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
          AND j.job_group >= o.job_group AND j.job_group <= o.job_group
        ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT o.cap FOR UPDATE SKIP LOCKED) AS l) AS k;
    batch_at := batch_at + room;
  END LOOP;
  chosen := ARRAY(SELECT u.id FROM unnest(cand_ids, cand_ranks, cand_places) AS u(id, rank, place)
    ORDER BY u.rank, u.place LIMIT room);
  WITH taken AS (
    UPDATE jobs AS j
    SET state = 'active', attempts = j.attempts + 1, lease_token = new_lease_token, worker_id = new_worker_id,
      lease_expires_at = due_by + coalesce(lease_ms_override, j.lease_ms) * interval '1 millisecond', updated_at = due_by
    WHERE j.id = ANY(chosen)
    RETURNING j)
  SELECT coalesce(array_agg(t.j ORDER BY array_position(chosen, (t.j).id)), '{}') INTO leased FROM taken AS t;
END IF;
leased_count := cardinality(leased);
IF leased_count = 0 THEN
  RETURN QUERY SELECT NULL::integer, false, NULL::bigint, NULL::jobs;
  RETURN;
END IF;
IF takes_turns THEN
  INSERT INTO queue_groups AS t (name, job_group, last_turn)
  SELECT job_name, coalesce((leased[g.i]).job_group, ''), max(s.last_turn + g.i)
  FROM generate_subscripts(leased, 1) AS g(i) GROUP BY 2
  ON CONFLICT (name, job_group) DO UPDATE SET last_turn = excluded.last_turn;
END IF;
IF s.rate_max IS NOT NULL OR takes_turns THEN
  UPDATE queue_settings AS q SET last_turn = s.last_turn + leased_count,
    recent_starts = CASE WHEN s.rate_max IS NULL THEN '{}' ELSE ARRAY(
      SELECT r FROM (SELECT r FROM unnest(s.recent_starts || array_fill(now_ms, ARRAY[leased_count])) AS r
        ORDER BY r DESC LIMIT s.rate_max) AS kept ORDER BY r) END
  WHERE q.name = job_name;
END IF;
in_window := ARRAY(SELECT r FROM unnest(recent || array_fill(now_ms, ARRAY[leased_count])) AS r ORDER BY r);
RETURN QUERY SELECT NULL::integer, false,
    CASE WHEN s.rate_max IS NOT NULL AND cardinality(in_window) >= s.rate_max
      THEN in_window[cardinality(in_window) - s.rate_max + 1] + s.rate_per_ms END, NULL::jobs
  UNION ALL SELECT g.i, false, NULL::bigint, leased[g.i] FROM generate_subscripts(leased, 1) AS g(i);
END $body$;
`,
};
