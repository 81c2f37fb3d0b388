import type { Migration } from './migration.ts';

/** Migration 20: groups take turns in the order of their names, from where the type's latest claim stopped. */
export const GROUP_CURSOR_MIGRATION: Migration = {
  version: 20,
  name: 'groups take turns from a cursor: a grouped claim reads only the groups it passes',
  // Migration 19's grouped claim found every group with waiting jobs, with its active count and last turn, and
  // ordered them by turn, on each claim, while it held the type's settings row: its work grew with the number
  // of groups, not with the jobs it leased. Round-robin needs no per-group turns. The settings row keeps
  // `group_cursor`, the last group the type's latest claim took from; a claim walks the group claim index from
  // just after it, wrapping around once, a chunk of `room` groups at a time (`group_heads_after`: each group's
  // first job it may take, one index probe per group), keeps the groups with room (group_concurrency less the
  // group's active jobs), and stops once it has a group for each job it may lease. Each group with ready jobs
  // thus gets one turn per pass, and a claim reads the groups it passes, not every group. When one job from
  // each group fills the claim (or no group may run two), the groups' first jobs are its candidates, locked by
  // primary key FOR UPDATE SKIP LOCKED and re-checked as waiting and due (the test is written as a CASE so that
  // no partial index on the state matches it and the ids are not looked up through one); otherwise, as
  // before, each group's first jobs up to its room, one round per group. The cursor moves to the last group
  // leased from. The walk is planned as migration 19's lookups are (sorts, bitmap and sequential scans off) so
  // that it follows the group index whatever the statistics say, with generic plans; it moves the type's due
  // delayed jobs itself, as `claim_jobs` does for the other paths. `queue_groups` (the turns) is dropped.
  sql: `
ALTER TABLE queue_settings ADD COLUMN group_cursor text COLLATE "C";
DROP TABLE queue_groups;
CREATE FUNCTION group_heads_after(job_name text, due_by timestamptz, min_version integer, max_version integer,
after_group text, up_to_group text, max_groups integer)
RETURNS TABLE (job_group text, id text) LANGUAGE plpgsql VOLATILE ROWS 100
SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off SET plan_cache_mode = force_generic_plan
SET search_path FROM CURRENT
AS $body$
DECLARE first_group text COLLATE "C";
first_id text COLLATE "C";
BEGIN
IF after_group IS NULL THEN
  SELECT j.job_group, j.id INTO first_group, first_id FROM jobs AS j
  WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group IS NOT NULL
    AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
  ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1;
ELSE
  SELECT j.job_group, j.id INTO first_group, first_id FROM jobs AS j
  WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group > after_group COLLATE "C"
    AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
  ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1;
END IF;
IF first_group IS NULL OR first_group > up_to_group COLLATE "C" THEN
  RETURN;
END IF;
RETURN QUERY WITH RECURSIVE w(job_group, id, n) AS (
    SELECT first_group, first_id, 1
    UNION ALL
    SELECT x.job_group, x.id, w.n + 1
    FROM w CROSS JOIN LATERAL (SELECT j.job_group, j.id FROM jobs AS j
      WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group > w.job_group
        AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
      ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1) AS x
    WHERE w.n < max_groups AND (up_to_group IS NULL OR w.job_group < up_to_group COLLATE "C"))
  SELECT w.job_group, w.id FROM w WHERE up_to_group IS NULL OR w.job_group <= up_to_group COLLATE "C";
END $body$;
CREATE OR REPLACE FUNCTION claim_limited_jobs(job_name text, due_by timestamptz, min_version integer, max_version integer, max_jobs integer,
new_lease_token text, new_worker_id text, lease_ms_override bigint)
RETURNS TABLE (claim_order integer, type_paused boolean, next_start_ms bigint, job jobs)
LANGUAGE plpgsql VOLATILE ROWS 100
SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off SET plan_cache_mode = force_generic_plan
SET search_path FROM CURRENT
AS $body$
DECLARE
s queue_settings;
now_ms bigint := (extract(epoch FROM due_by) * 1000)::bigint;
recent bigint[] := '{}';
room integer := max_jobs;
takes_turns boolean;
busy_groups text[] := '{}';
busy_counts integer[] := '{}';
any_group boolean := false;
wrapped boolean;
at_group text;
walked integer;
open_heads text[] := '{}';
open_groups text[] := '{}';
open_caps integer[] := '{}';
cand_ids text[] := '{}';
cand_ranks integer[] := '{}';
cand_places integer[] := '{}';
chosen text[];
last_place integer;
leased jobs[];
leased_count integer;
in_window bigint[];
moved integer;
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
  PERFORM set_config('synchronous_commit', 'off', true);
  LOOP
    UPDATE jobs AS d SET state = 'waiting'
    WHERE d.id IN (SELECT x.id FROM jobs AS x WHERE x.state = 'delayed' AND x.name = job_name AND x.run_at <= due_by
      ORDER BY x.run_at LIMIT 1000 FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS moved = ROW_COUNT;
    EXIT WHEN moved < 1000;
  END LOOP;
  IF s.group_concurrency IS NOT NULL THEN
    SELECT coalesce(array_agg(b.job_group), '{}'), coalesce(array_agg(b.n), '{}') INTO busy_groups, busy_counts
    FROM (SELECT a.job_group, count(*)::integer AS n FROM jobs AS a
      WHERE a.state = 'active' AND a.name = job_name AND a.job_group IS NOT NULL GROUP BY a.job_group) AS b;
  END IF;
  wrapped := s.group_cursor IS NULL;
  at_group := s.group_cursor;
  LOOP
    SELECT count(*)::integer, max(h.job_group),
      open_groups || coalesce(array_agg(h.job_group ORDER BY h.job_group) FILTER (WHERE h.cap > 0), '{}'),
      open_caps || coalesce(array_agg(h.cap ORDER BY h.job_group) FILTER (WHERE h.cap > 0), '{}'),
      open_heads || coalesce(array_agg(h.id ORDER BY h.job_group) FILTER (WHERE h.cap > 0), '{}')
    INTO walked, at_group, open_groups, open_caps, open_heads
    FROM (SELECT g.job_group, g.id,
        CASE WHEN s.group_concurrency IS NULL OR g.job_group = '' THEN room
          ELSE least(room, s.group_concurrency - coalesce(busy_counts[array_position(busy_groups, g.job_group)], 0)) END AS cap
      FROM group_heads_after(job_name, due_by, min_version, max_version, at_group,
        CASE WHEN wrapped THEN s.group_cursor END, room) AS g) AS h;
    any_group := any_group OR walked > 0;
    EXIT WHEN cardinality(open_groups) >= room;
    IF walked < room THEN
      EXIT WHEN wrapped;
      wrapped := true;
      at_group := NULL;
    END IF;
  END LOOP;
  IF cardinality(open_groups) >= room OR NOT EXISTS (SELECT FROM unnest(open_caps) AS c WHERE c > 1) THEN
    SELECT coalesce(array_agg(l.id ORDER BY l.place), '{}'), coalesce(array_agg(l.place ORDER BY l.place), '{}')
    INTO cand_ids, cand_places
    FROM (SELECT j.id, h.place FROM unnest(open_heads[1 : room]) WITH ORDINALITY AS h(id, place)
      JOIN jobs AS j ON j.id = h.id
      WHERE CASE WHEN j.state = 'waiting' AND j.run_at <= due_by THEN true END
      FOR UPDATE OF j SKIP LOCKED) AS l;
    cand_ranks := array_fill(1, ARRAY[cardinality(cand_ids)]);
  ELSE
    SELECT coalesce(array_agg(k.id), '{}'), coalesce(array_agg(k.rank), '{}'), coalesce(array_agg(o.place), '{}')
    INTO cand_ids, cand_ranks, cand_places
    FROM unnest(open_groups, open_caps) WITH ORDINALITY AS o(job_group, cap, place)
    CROSS JOIN LATERAL (
      SELECT l.id, (row_number() OVER (ORDER BY l.job_group, l.priority DESC, l.order_key, l.order_tie))::integer AS rank
      FROM (SELECT j.id, j.job_group, j.priority, j.order_key, j.order_tie FROM jobs AS j
        WHERE j.state = 'waiting' AND j.name = job_name AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
          AND j.job_group >= o.job_group AND j.job_group <= o.job_group
        ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT o.cap FOR UPDATE SKIP LOCKED) AS l) AS k;
  END IF;
END IF;
IF NOT takes_turns OR NOT any_group THEN
  SELECT coalesce(array_agg(c ORDER BY c.priority DESC, c.order_key, c.order_tie), '{}') INTO leased
  FROM claim_jobs(job_name, due_by, min_version, max_version, room, new_lease_token, new_worker_id, lease_ms_override) AS c;
ELSE
  SELECT array_agg(c.id ORDER BY c.rank, c.place), max(c.place) INTO chosen, last_place
  FROM (SELECT u.id, u.rank, u.place FROM unnest(cand_ids, cand_ranks, cand_places) AS u(id, rank, place)
    ORDER BY u.rank, u.place LIMIT room) AS c;
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
IF s.rate_max IS NOT NULL OR takes_turns THEN
  UPDATE queue_settings AS q SET last_turn = s.last_turn + leased_count, group_cursor = coalesce(open_groups[last_place], s.group_cursor),
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
