import type { Migration } from './migration.ts';

/** Migration 21: a grouped claim picks, leases, records its turn and answers in one statement. */
export const GROUPED_LEASE_MIGRATION: Migration = {
  version: 21,
  name: 'a grouped claim leases, moves its cursor and answers in one statement',
  // Migration 20's grouped claim ran its last steps as statements of their own, each planned and run apart inside
  // the function: lock the chosen groups' first jobs, pick the jobs to lease, lease them (ordering them back by a
  // search of the chosen ids for each job), move the cursor, answer. They are now one statement: the candidates
  // (each group's first job locked by primary key, or each group's first jobs up to its room) feed the lease, whose
  // RETURNING feeds the settings row's update and the answer, so the places and turns cannot drift apart. The
  // groups' active counts are looked up by group name in a jsonb object rather than searched for in an array for
  // each group passed. Claims that do not take turns keep migration 20's steps, and only a type with a rate limit
  // works out when its next start may come. Behaviour is unchanged; the function is replaced whole, as migrations
  // are append-only (its unchanged parts repeat migration 20's).
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
busy jsonb := '{}';
any_group boolean := false;
wrapped boolean;
at_group text;
walked integer;
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
    SELECT coalesce(jsonb_object_agg(b.job_group, b.n), '{}') INTO busy
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
          ELSE least(room, s.group_concurrency - coalesce((busy ->> g.job_group)::integer, 0)) END AS cap
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
END IF;
IF NOT takes_turns OR NOT any_group THEN
  SELECT coalesce(array_agg(c ORDER BY c.priority DESC, c.order_key, c.order_tie), '{}') INTO leased
  FROM claim_jobs(job_name, due_by, min_version, max_version, room, new_lease_token, new_worker_id, lease_ms_override) AS c;
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
