import type { Migration } from './migration.ts';

/** Migration 22: a limited claim runs fewer statements, and smaller ones, for the same answer. */
export const LEAN_LIMITED_CLAIM_MIGRATION: Migration = {
  version: 22,
  name: 'a limited claim runs fewer and smaller statements',
  // Most of a limited claim's own cost was starting its statements, not running them: each statement inside the
  // function builds its plan's executor state on every call, and migration 21's grouped claim built states it
  // did not use. It now starts only what the claim needs:
  // - a claim under a concurrency limit alone (no rate limit, no groups) answers straight from `claim_jobs`, as a
  //   type without settings does, instead of gathering the jobs into an array and answering from that;
  // - a grouped claim moves due delayed jobs only when one is due (an index probe decides), instead of running
  //   the move's update on every claim;
  // - the active groups are read as a list of names (one entry per active job) instead of being counted per
  //   group into a jsonb object; a group's count is its entries in the list;
  // - the walk over the groups is a loop over `group_heads_after`'s rows instead of one statement with five
  //   ordered aggregates, each of which set up a sort; a walk that needs one more group probes for it itself,
  //   as `group_heads_after`'s first probe does, without the function's call and its recursive step; and a
  //   walk that passes groups without room walks on in chunks as large as the groups it has passed, as on MySQL,
  //   rather than one group per call;
  // - when each group taken gives one job and no rate limit is set (the common case, and any claim under
  //   `groupConcurrency: 1`), the claim runs a statement of its own that locks the groups' first jobs, leases
  //   them and moves the cursor; the statement shared by the other cases also holds the per-group rounds and
  //   the rate window, and their executor state was built even when unused. The jobs' claim order is their
  //   group's place in the walk, which can leave gaps where a first job was locked by another claim.
  // Behaviour is unchanged; the function is replaced whole, as migrations are append-only (its unchanged parts
  // repeat migration 21's).
  sql: `
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
active_groups text[] := '{}';
any_group boolean := false;
wrapped boolean;
at_group text COLLATE "C";
walked integer;
chunk integer;
passed integer := 0;
head_group text COLLATE "C";
head_id text;
head_cap integer;
open_heads text[] := '{}';
open_groups text[] := '{}';
open_caps integer[] := '{}';
heads_only boolean;
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
IF NOT takes_turns AND s.rate_max IS NULL THEN
  RETURN QUERY SELECT NULL::integer, false, NULL::bigint, NULL::jobs
    UNION ALL SELECT (row_number() OVER (ORDER BY c.priority DESC, c.order_key, c.order_tie))::integer, false, NULL::bigint, c
    FROM claim_jobs(job_name, due_by, min_version, max_version, room, new_lease_token, new_worker_id, lease_ms_override) AS c;
  RETURN;
END IF;
IF takes_turns THEN
  PERFORM set_config('synchronous_commit', 'off', true);
  WHILE EXISTS (SELECT FROM jobs AS x WHERE x.state = 'delayed' AND x.name = job_name AND x.run_at <= due_by) LOOP
    UPDATE jobs AS d SET state = 'waiting'
    WHERE d.id IN (SELECT x.id FROM jobs AS x WHERE x.state = 'delayed' AND x.name = job_name AND x.run_at <= due_by
      ORDER BY x.run_at LIMIT 1000 FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS moved = ROW_COUNT;
    EXIT WHEN moved < 1000;
  END LOOP;
  IF s.group_concurrency IS NOT NULL THEN
    active_groups := ARRAY(SELECT a.job_group FROM jobs AS a
      WHERE a.state = 'active' AND a.name = job_name AND a.job_group IS NOT NULL);
  END IF;
  wrapped := s.group_cursor IS NULL;
  at_group := s.group_cursor;
  LOOP
    chunk := greatest(room - cardinality(open_groups), passed);
    walked := 0;
    IF chunk = 1 THEN
      IF at_group IS NULL THEN
        SELECT j.job_group, j.id INTO head_group, head_id FROM jobs AS j
        WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group IS NOT NULL
          AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
        ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1;
      ELSE
        SELECT j.job_group, j.id INTO head_group, head_id FROM jobs AS j
        WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group > at_group
          AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
        ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1;
      END IF;
      IF FOUND AND NOT coalesce(wrapped AND head_group > s.group_cursor, false) THEN
        walked := 1;
        at_group := head_group;
        head_cap := CASE WHEN s.group_concurrency IS NULL OR head_group = '' THEN room
          ELSE least(room, s.group_concurrency - cardinality(array_positions(active_groups, head_group))) END;
        IF head_cap > 0 THEN
          open_groups := open_groups || head_group;
          open_caps := open_caps || head_cap;
          open_heads := open_heads || head_id;
        END IF;
      END IF;
    ELSE
      FOR head_group, head_id IN SELECT g.job_group, g.id FROM group_heads_after(job_name, due_by, min_version, max_version,
          at_group, CASE WHEN wrapped THEN s.group_cursor END, chunk) AS g ORDER BY g.job_group LOOP
        walked := walked + 1;
        at_group := head_group;
        head_cap := CASE WHEN s.group_concurrency IS NULL OR head_group = '' THEN room
          ELSE least(room, s.group_concurrency - cardinality(array_positions(active_groups, head_group))) END;
        IF head_cap > 0 THEN
          open_groups := open_groups || head_group;
          open_caps := open_caps || head_cap;
          open_heads := open_heads || head_id;
        END IF;
      END LOOP;
    END IF;
    passed := passed + walked;
    any_group := any_group OR walked > 0;
    EXIT WHEN cardinality(open_groups) >= room;
    IF walked < chunk THEN
      EXIT WHEN wrapped;
      wrapped := true;
      at_group := NULL;
    END IF;
  END LOOP;
END IF;
IF NOT takes_turns OR NOT any_group THEN
  SELECT coalesce(array_agg(c ORDER BY c.priority DESC, c.order_key, c.order_tie), '{}') INTO leased
  FROM claim_jobs(job_name, due_by, min_version, max_version, room, new_lease_token, new_worker_id, lease_ms_override) AS c;
ELSIF s.rate_max IS NULL AND (cardinality(open_groups) >= room OR NOT 1 < ANY(open_caps)) THEN
  RETURN QUERY WITH chosen AS (
      SELECT j.id, h.place FROM unnest(open_heads[1 : room]) WITH ORDINALITY AS h(id, place)
      JOIN jobs AS j ON j.id = h.id
      WHERE CASE WHEN j.state = 'waiting' AND j.run_at <= due_by THEN true END
      FOR UPDATE OF j SKIP LOCKED),
    taken AS (
      UPDATE jobs AS j
      SET state = 'active', attempts = j.attempts + 1, lease_token = new_lease_token, worker_id = new_worker_id,
        lease_expires_at = due_by + coalesce(lease_ms_override, j.lease_ms) * interval '1 millisecond', updated_at = due_by
      FROM chosen AS c WHERE j.id = c.id
      RETURNING j, c.place),
    saved AS (
      UPDATE queue_settings AS q SET last_turn = s.last_turn + y.n, group_cursor = coalesce(open_groups[y.last_place], s.group_cursor)
      FROM (SELECT count(*)::integer AS n, max(t.place) AS last_place FROM taken AS t) AS y
      WHERE q.name = job_name AND y.n > 0)
  SELECT NULL::integer, false, NULL::bigint, NULL::jobs
  UNION ALL SELECT t.place::integer, false, NULL::bigint, t.j FROM taken AS t;
  RETURN;
ELSE
  heads_only := cardinality(open_groups) >= room OR NOT 1 < ANY(open_caps);
  RETURN QUERY WITH candidates AS (
      SELECT l.id, 1 AS rank, l.place FROM (SELECT j.id, h.place FROM unnest(open_heads[1 : room]) WITH ORDINALITY AS h(id, place)
        JOIN jobs AS j ON j.id = h.id
        WHERE heads_only AND CASE WHEN j.state = 'waiting' AND j.run_at <= due_by THEN true END
        FOR UPDATE OF j SKIP LOCKED) AS l
      UNION ALL
      SELECT k.id, k.rank, o.place FROM unnest(open_groups, open_caps) WITH ORDINALITY AS o(job_group, cap, place)
      CROSS JOIN LATERAL (
        SELECT l.id, (row_number() OVER (ORDER BY l.job_group, l.priority DESC, l.order_key, l.order_tie))::integer AS rank
        FROM (SELECT j.id, j.job_group, j.priority, j.order_key, j.order_tie FROM jobs AS j
          WHERE j.state = 'waiting' AND j.name = job_name AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
            AND j.job_group >= o.job_group AND j.job_group <= o.job_group
          ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT o.cap FOR UPDATE SKIP LOCKED) AS l) AS k
      WHERE NOT heads_only),
    chosen AS (SELECT c.id, c.rank, c.place FROM candidates AS c ORDER BY c.rank, c.place LIMIT room),
    taken AS (
      UPDATE jobs AS j
      SET state = 'active', attempts = j.attempts + 1, lease_token = new_lease_token, worker_id = new_worker_id,
        lease_expires_at = due_by + coalesce(lease_ms_override, j.lease_ms) * interval '1 millisecond', updated_at = due_by
      FROM chosen AS c WHERE j.id = c.id
      RETURNING j, c.rank, c.place),
    tally AS (SELECT count(*)::integer AS n, max(t.place) AS last_place FROM taken AS t),
    saved AS (
      UPDATE queue_settings AS q SET last_turn = s.last_turn + y.n, group_cursor = coalesce(open_groups[y.last_place], s.group_cursor),
        recent_starts = CASE WHEN s.rate_max IS NULL THEN '{}' ELSE ARRAY(
          SELECT r FROM (SELECT r FROM unnest(s.recent_starts || array_fill(now_ms, ARRAY[y.n])) AS r
            ORDER BY r DESC LIMIT s.rate_max) AS kept ORDER BY r) END
      FROM tally AS y WHERE q.name = job_name AND y.n > 0),
    starts AS (SELECT CASE WHEN s.rate_max IS NOT NULL
        THEN ARRAY(SELECT r FROM unnest(recent || array_fill(now_ms, ARRAY[y.n])) AS r ORDER BY r) END AS r
      FROM tally AS y)
  SELECT NULL::integer, false,
      CASE WHEN cardinality(w.r) >= s.rate_max THEN w.r[cardinality(w.r) - s.rate_max + 1] + s.rate_per_ms END, NULL::jobs
    FROM starts AS w
  UNION ALL SELECT (row_number() OVER (ORDER BY t.rank, t.place))::integer, false, NULL::bigint, t.j FROM taken AS t;
  RETURN;
END IF;
leased_count := cardinality(leased);
IF leased_count = 0 THEN
  RETURN QUERY SELECT NULL::integer, false, NULL::bigint, NULL::jobs;
  RETURN;
END IF;
IF s.rate_max IS NOT NULL OR takes_turns THEN
  UPDATE queue_settings AS q SET last_turn = s.last_turn + leased_count,
    recent_starts = CASE WHEN s.rate_max IS NULL THEN '{}' ELSE ARRAY(
      SELECT r FROM (SELECT r FROM unnest(s.recent_starts || array_fill(now_ms, ARRAY[leased_count])) AS r
        ORDER BY r DESC LIMIT s.rate_max) AS kept ORDER BY r) END
  WHERE q.name = job_name;
END IF;
IF s.rate_max IS NOT NULL THEN
  in_window := ARRAY(SELECT r FROM unnest(recent || array_fill(now_ms, ARRAY[leased_count])) AS r ORDER BY r);
END IF;
RETURN QUERY SELECT NULL::integer, false,
    CASE WHEN s.rate_max IS NOT NULL AND cardinality(in_window) >= s.rate_max
      THEN in_window[cardinality(in_window) - s.rate_max + 1] + s.rate_per_ms END, NULL::jobs
  UNION ALL SELECT g.i, false, NULL::bigint, leased[g.i] FROM generate_subscripts(leased, 1) AS g(i);
END $body$;
`,
};
