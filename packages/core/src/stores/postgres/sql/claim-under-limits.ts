import { claimedColumnsOf, LEASE_UNTIL_DEADLINE } from './claim-jobs.ts';

/** The columns a claim reads (`claimedColumnsOf`), empty, for the row that carries a claim's status. */
const NO_JOB =
  'NULL::text, NULL::integer, NULL::jsonb, NULL::integer, NULL::integer, NULL::bigint, NULL::bigint, NULL::double precision, NULL::timestamptz, NULL::jsonb, NULL::integer, NULL::text';

/**
 * `claim_under_limits(job_name, due_by, min_version, max_version, max_jobs, new_lease_token, new_worker_id,
 * lease_ms_override)`: a claim of a type under flow control (see `claimUnderSettings` in
 * ../shared/limited-claim.ts, whose algorithm this runs). Returns the leased jobs in claim order, one row each
 * with `claim_order` 1, 2, … and the columns a claim reads, and one row with `claim_order` NULL that says
 * whether the type is paused (`type_paused`) and when its rate limit or its hold (`held_until`, after `due_by`:
 * nothing is leased) lets the next job start (`next_start_ms`, epoch ms, or NULL).
 *
 * Locks: the type's `queue_settings` row first (`FOR UPDATE`), so the limited claims of a type run one at a
 * time and count each other's leases exactly; then the jobs it leases, `FOR UPDATE SKIP LOCKED`. A type with
 * no settings row is claimed as `claim_jobs` claims it. Turns `synchronous_commit` off for its transaction, as
 * `claim_jobs` does.
 *
 * Guarantees: never more active jobs of the type than `concurrency`, nor of a group than `group_concurrency`;
 * never more starts in a window of `rate_per_ms` than `rate_max` (the latest starts are kept in
 * `recent_starts`); groups take turns in the order of their names from `group_cursor`, the group the type's
 * previous claim took from last, wrapping round once, so each group with ready jobs gets one turn per pass.
 * Under strict group order (`group_order`), a group with a started job waiting to run again (`attempts` above 0,
 * read through `jobs_group_held_idx`) is held: only that job of it is taken, once due, ahead of the walk.
 *
 * How: under a concurrency limit alone it leases through `claim_jobs`. For a grouped type it moves the type's due
 * delayed jobs when one is due, reads the groups of the type's active jobs, and walks the group claim index
 * from the cursor a chunk of groups at a time (one recursive statement per chunk: each group's first job it may
 * take, one index probe per group, with the group's room worked out), until it has a group with room for each
 * job it may lease; a walk of one group probes with a statement of its own. The groups' first jobs are its
 * candidates, fetched at the row addresses (`ctid`) the walk kept and checked against their ids (a row updated
 * since the walk is skipped, as one another claim holds is); when fewer groups than jobs are open, it takes up
 * to each group's room from each, one round per group. One statement leases them, records the starts, moves
 * the cursor and answers; when each group gives one job and no rate limit is set, a smaller statement of its
 * own does (starting an executor costs more inside a function than running it). Planned with sorts, bitmap
 * and sequential scans and JIT off, with generic plans, so its lookups walk the group claim index whatever the
 * statistics say.
 */
export const CLAIM_UNDER_LIMITS = `
CREATE FUNCTION claim_under_limits(job_name text, due_by timestamptz, min_version integer, max_version integer, max_jobs integer,
new_lease_token text, new_worker_id text, lease_ms_override bigint)
RETURNS TABLE (claim_order integer, type_paused boolean, next_start_ms bigint, id text, version integer, payload jsonb,
attempts integer, max_attempts integer, lease_ms bigint, timeout_ms bigint, progress double precision, run_at timestamptz, trace_context jsonb,
child_count integer, parent_id text)
LANGUAGE plpgsql VOLATILE ROWS 100
SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off SET plan_cache_mode = force_generic_plan
SET search_path FROM CURRENT
AS $body$
#variable_conflict use_column
DECLARE
s queue_settings;
now_ms bigint := (extract(epoch FROM due_by) * 1000)::bigint;
recent bigint[] := '{}';
room integer := max_jobs;
takes_turns boolean;
active_groups text[] := '{}';
held_groups text[];
any_group boolean := false;
wrapped boolean;
at_group text COLLATE "C";
walked integer;
chunk integer;
passed integer := 0;
head_group text COLLATE "C";
head_id text;
head_at tid;
head_cap integer;
open_heads text[] := '{}';
open_ats tid[] := '{}';
walked_groups text[];
walked_caps integer[];
walked_heads text[];
walked_ats tid[];
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
  RETURN QUERY SELECT NULL::integer, false, NULL::bigint, ${NO_JOB}
    UNION ALL SELECT (row_number() OVER (ORDER BY c.priority DESC, c.order_key, c.order_tie))::integer, false, NULL::bigint, ${claimedColumnsOf('c')}
    FROM claim_jobs(job_name, due_by, min_version, max_version, max_jobs, new_lease_token, new_worker_id, lease_ms_override) AS c;
  RETURN;
END IF;
IF s.paused THEN
  RETURN QUERY SELECT NULL::integer, true, NULL::bigint, ${NO_JOB};
  RETURN;
END IF;
IF s.held_until > due_by THEN
  RETURN QUERY SELECT NULL::integer, false, (extract(epoch FROM s.held_until) * 1000)::bigint, ${NO_JOB};
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
      THEN recent[cardinality(recent) - s.rate_max + 1] + s.rate_per_ms END, ${NO_JOB};
  RETURN;
END IF;
takes_turns := s.grouped OR s.group_concurrency IS NOT NULL;
IF NOT takes_turns AND s.rate_max IS NULL THEN
  RETURN QUERY SELECT NULL::integer, false, NULL::bigint, ${NO_JOB}
    UNION ALL SELECT (row_number() OVER (ORDER BY c.priority DESC, c.order_key, c.order_tie))::integer, false, NULL::bigint, ${claimedColumnsOf('c')}
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
  IF s.group_order = 'strict' THEN
    held_groups := ARRAY(SELECT DISTINCT h.job_group FROM jobs AS h
      WHERE h.attempts > 0 AND h.state IN ('waiting', 'delayed') AND h.job_group IS NOT NULL
        AND h.name = job_name AND h.job_group <> '');
    SELECT coalesce(array_agg(r.job_group), '{}'), coalesce(array_agg(r.id), '{}'), coalesce(array_agg(r.at), '{}')
      INTO open_groups, open_heads, open_ats
      FROM (SELECT DISTINCT ON (h.job_group) h.job_group, h.id, h.ctid AS at FROM jobs AS h
        WHERE h.attempts > 0 AND h.state = 'waiting' AND h.job_group IS NOT NULL AND h.name = job_name
          AND h.job_group <> '' AND h.run_at <= due_by AND h.version BETWEEN min_version AND max_version
          AND NOT h.job_group = ANY(active_groups)
        ORDER BY h.job_group LIMIT room) AS r;
    open_caps := array_fill(1, ARRAY[cardinality(open_groups)]);
    active_groups := active_groups || held_groups;
    any_group := cardinality(open_groups) > 0;
  END IF;
  wrapped := s.group_cursor IS NULL;
  at_group := s.group_cursor;
  LOOP
    EXIT WHEN cardinality(open_groups) >= room;
    chunk := greatest(room - cardinality(open_groups), passed);
    walked := 0;
    IF chunk = 1 THEN
      IF at_group IS NULL THEN
        SELECT j.job_group, j.id, j.ctid INTO head_group, head_id, head_at FROM jobs AS j
        WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group IS NOT NULL
          AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
        ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1;
      ELSE
        SELECT j.job_group, j.id, j.ctid INTO head_group, head_id, head_at FROM jobs AS j
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
          open_ats := open_ats || head_at;
        END IF;
      END IF;
    ELSE
      SELECT count(*)::integer, max(h.job_group),
          coalesce(array_agg(h.job_group) FILTER (WHERE h.cap > 0), '{}'), coalesce(array_agg(h.cap) FILTER (WHERE h.cap > 0), '{}'),
          coalesce(array_agg(h.id) FILTER (WHERE h.cap > 0), '{}'), coalesce(array_agg(h.at) FILTER (WHERE h.cap > 0), '{}')
        INTO walked, head_group, walked_groups, walked_caps, walked_heads, walked_ats
        FROM (WITH RECURSIVE w(job_group, id, at, n) AS (
            (SELECT j.job_group, j.id, j.ctid, 1 FROM jobs AS j
              WHERE at_group IS NULL AND j.state = 'waiting' AND j.name = job_name AND j.job_group IS NOT NULL
                AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
              ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1)
            UNION ALL
            (SELECT j.job_group, j.id, j.ctid, 1 FROM jobs AS j
              WHERE at_group IS NOT NULL AND j.state = 'waiting' AND j.name = job_name AND j.job_group > at_group
                AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
              ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1)
            UNION ALL
            SELECT x.job_group, x.id, x.ctid, w.n + 1
            FROM w CROSS JOIN LATERAL (SELECT j.job_group, j.id, j.ctid FROM jobs AS j
              WHERE j.state = 'waiting' AND j.name = job_name AND j.job_group > w.job_group
                AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
              ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT 1) AS x
            WHERE w.n < chunk AND (NOT wrapped OR s.group_cursor IS NULL OR w.job_group < s.group_cursor))
          SELECT w.job_group, w.id, w.at,
            CASE WHEN s.group_concurrency IS NULL OR w.job_group = '' THEN room
              ELSE least(room, s.group_concurrency - cardinality(array_positions(active_groups, w.job_group))) END AS cap
          FROM w WHERE NOT wrapped OR s.group_cursor IS NULL OR w.job_group <= s.group_cursor) AS h;
      IF walked > 0 THEN
        at_group := head_group;
        open_groups := open_groups || walked_groups;
        open_caps := open_caps || walked_caps;
        open_heads := open_heads || walked_heads;
        open_ats := open_ats || walked_ats;
      END IF;
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
      SELECT j.id, j.ctid AS at, h.place FROM unnest(open_heads[1 : room], open_ats[1 : room]) WITH ORDINALITY AS h(id, at, place)
      JOIN jobs AS j ON j.ctid = h.at
      WHERE j.id = h.id AND CASE WHEN j.state = 'waiting' AND j.run_at <= due_by THEN true END
      FOR UPDATE OF j SKIP LOCKED),
    taken AS (
      UPDATE jobs AS j
      SET state = 'active', attempts = j.attempts + 1, lease_token = new_lease_token, worker_id = new_worker_id,
        ${LEASE_UNTIL_DEADLINE}, updated_at = due_by
      FROM chosen AS c WHERE j.ctid = c.at AND j.id = c.id
      RETURNING ${claimedColumnsOf('j')}, c.place),
    saved AS (
      UPDATE queue_settings AS q SET last_turn = s.last_turn + y.n, group_cursor = coalesce(open_groups[y.last_place], s.group_cursor)
      FROM (SELECT count(*)::integer AS n, max(t.place) AS last_place FROM taken AS t) AS y
      WHERE q.name = job_name AND y.n > 0)
  SELECT NULL::integer, false, NULL::bigint, ${NO_JOB}
  UNION ALL SELECT t.place::integer, false, NULL::bigint, ${claimedColumnsOf('t')} FROM taken AS t;
  RETURN;
ELSE
  heads_only := cardinality(open_groups) >= room OR NOT 1 < ANY(open_caps);
  RETURN QUERY WITH candidates AS (
      SELECT l.id, l.at, 1 AS rank, l.place FROM (SELECT j.id, j.ctid AS at, h.place
        FROM unnest(open_heads[1 : room], open_ats[1 : room]) WITH ORDINALITY AS h(id, at, place)
        JOIN jobs AS j ON j.ctid = h.at
        WHERE heads_only AND j.id = h.id AND CASE WHEN j.state = 'waiting' AND j.run_at <= due_by THEN true END
        FOR UPDATE OF j SKIP LOCKED) AS l
      UNION ALL
      SELECT k.id, k.at, k.rank, o.place FROM unnest(open_groups, open_caps) WITH ORDINALITY AS o(job_group, cap, place)
      CROSS JOIN LATERAL (
        SELECT l.id, l.at, (row_number() OVER (ORDER BY l.job_group, l.priority DESC, l.order_key, l.order_tie))::integer AS rank
        FROM (SELECT j.id, j.ctid AS at, j.job_group, j.priority, j.order_key, j.order_tie FROM jobs AS j
          WHERE j.state = 'waiting' AND j.name = job_name AND j.run_at <= due_by AND j.version BETWEEN min_version AND max_version
            AND j.job_group >= o.job_group AND j.job_group <= o.job_group
          ORDER BY j.job_group, j.priority DESC, j.order_key, j.order_tie LIMIT o.cap FOR UPDATE SKIP LOCKED) AS l) AS k
      WHERE NOT heads_only),
    chosen AS (SELECT c.id, c.at, c.rank, c.place FROM candidates AS c ORDER BY c.rank, c.place LIMIT room),
    taken AS (
      UPDATE jobs AS j
      SET state = 'active', attempts = j.attempts + 1, lease_token = new_lease_token, worker_id = new_worker_id,
        ${LEASE_UNTIL_DEADLINE}, updated_at = due_by
      FROM chosen AS c WHERE j.ctid = c.at AND j.id = c.id
      RETURNING ${claimedColumnsOf('j')}, c.rank, c.place),
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
      CASE WHEN cardinality(w.r) >= s.rate_max THEN w.r[cardinality(w.r) - s.rate_max + 1] + s.rate_per_ms END, ${NO_JOB}
    FROM starts AS w
  UNION ALL SELECT (row_number() OVER (ORDER BY t.rank, t.place))::integer, false, NULL::bigint, ${claimedColumnsOf('t')} FROM taken AS t;
  RETURN;
END IF;
leased_count := cardinality(leased);
IF leased_count = 0 THEN
  RETURN QUERY SELECT NULL::integer, false, NULL::bigint, ${NO_JOB};
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
      THEN in_window[cardinality(in_window) - s.rate_max + 1] + s.rate_per_ms END, ${NO_JOB}
  UNION ALL SELECT l.ordinality::integer, false, NULL::bigint, ${claimedColumnsOf('l')} FROM unnest(leased) WITH ORDINALITY AS l;
END $body$
`;
