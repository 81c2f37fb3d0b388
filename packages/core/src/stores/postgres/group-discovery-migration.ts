import type { Migration } from './migration.ts';

/** Migration 20: a grouped claim finds the groups with waiting jobs before it locks its type's settings. */
export const GROUP_DISCOVERY_MIGRATION: Migration = {
  version: 20,
  name: 'a grouped claim finds the waiting groups before it locks the settings row',
  // Limited claims of one type take turns on its settings row, which each holds until it commits. Migration 19's
  // grouped claim did all its work there, the walk of the group claim index for every group with waiting jobs
  // included, so the claims of a grouped type walked it one after another. `waiting_groups_of` now moves the
  // type's due delayed jobs and walks the index (as migration 19 planned it) before the row is locked, so
  // concurrent claims walk side by side; under the lock a claim still counts active jobs, reads turns, locks
  // its candidates (each re-checked as waiting under its row lock) and records turns and starts. What a claim
  // sees is what it would have seen had it begun a moment earlier: a group whose first job arrives during the
  // walk waits for the next claim; a group emptied meanwhile yields no candidate. A type that only becomes
  // grouped while its settings row is read walks under the lock, as before. The rest is migration 19's text.
  sql: `
CREATE FUNCTION waiting_groups_of(job_name text, due_by timestamptz) RETURNS text[]
LANGUAGE plpgsql VOLATILE
SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off
SET search_path FROM CURRENT
AS $body$
DECLARE moved integer;
BEGIN
PERFORM set_config('synchronous_commit', 'off', true);
LOOP
  UPDATE jobs AS d SET state = 'waiting'
  WHERE d.id IN (SELECT x.id FROM jobs AS x WHERE x.state = 'delayed' AND x.name = job_name AND x.run_at <= due_by
    ORDER BY x.run_at LIMIT 1000 FOR UPDATE SKIP LOCKED);
  GET DIAGNOSTICS moved = ROW_COUNT;
  EXIT WHEN moved < 1000;
END LOOP;
RETURN ARRAY(WITH RECURSIVE g(job_group) AS (
  (SELECT j.job_group FROM jobs AS j WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group IS NOT NULL
   ORDER BY j.job_group LIMIT 1)
  UNION ALL
  SELECT (SELECT j.job_group FROM jobs AS j WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group > g.job_group
          ORDER BY j.job_group LIMIT 1)
  FROM g WHERE g.job_group IS NOT NULL)
  SELECT g.job_group FROM g WHERE g.job_group IS NOT NULL);
END $body$;
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
peek queue_settings;
waiting_groups text[];
BEGIN
SELECT * INTO peek FROM queue_settings AS q WHERE q.name = job_name;
IF FOUND AND NOT peek.paused AND (peek.grouped OR peek.group_concurrency IS NOT NULL) THEN
  waiting_groups := waiting_groups_of(job_name, due_by);
END IF;
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
IF takes_turns AND waiting_groups IS NULL THEN
  waiting_groups := waiting_groups_of(job_name, due_by);
END IF;
IF takes_turns THEN
  WITH busy AS (
    SELECT a.job_group, count(*)::integer AS n FROM jobs AS a
    WHERE s.group_concurrency IS NOT NULL AND a.state = 'active' AND a.name = job_name AND a.job_group IS NOT NULL
    GROUP BY a.job_group),
  capped AS (
    SELECT g.job_group, coalesce(t.last_turn, 0) AS turn,
      CASE WHEN s.group_concurrency IS NULL OR g.job_group = '' THEN room
        ELSE least(room, s.group_concurrency - coalesce(b.n, 0)) END AS cap
    FROM unnest(waiting_groups) AS g(job_group)
    LEFT JOIN queue_groups AS t ON t.name = job_name AND t.job_group = g.job_group
    LEFT JOIN busy AS b ON b.job_group = g.job_group)
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
