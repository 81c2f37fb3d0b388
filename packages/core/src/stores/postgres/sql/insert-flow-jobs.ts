import { notStartedSql, orderKeySql } from '../sql-fragments.ts';

/** The columns a flow's job is inserted with, in the order of `FLOW_JOB_VALUES`. */
export const FLOW_JOB_COLUMNS = `id, name, version, payload, state, priority, job_order, order_key, run_at, created_at, updated_at,
  max_attempts, backoff, lease_ms, replay_of, trace_context, job_group, parent_id, on_failure, child_count,
  pending_children, timeout_ms`;

/**
 * A flow job's values from its row `u` of `FLOW_JOBS`: a parent `waiting-children`, any other job waiting or delayed.
 * The arrays are typed, so each value is parsed once as the statement binds them, where a text cast in this list
 * would parse it again at each use (the run time three times a row); the JSON fields excepted, cast row by row
 * (see `arrayParam` in insert-statements.ts).
 */
export const FLOW_JOB_VALUES = `u.id, u.name, u.version, u.payload::jsonb,
  CASE WHEN u.pending > 0 THEN 'waiting-children' ELSE ${notStartedSql('u.run_at', 'u.created_at')} END,
  u.priority, u.job_order, ${orderKeySql('u.job_order', 'u.run_at')}, u.run_at, u.created_at, u.created_at,
  u.max_attempts, u.backoff::jsonb, u.lease_ms, u.replay_of, u.trace_context::jsonb, u.job_group,
  u.parent_id, u.on_failure, u.pending, u.pending, u.timeout_ms`;

/**
 * The jobs `$1`…`$18` describe, one row `u` each, numbered by `ord` in the order given. A field no job has may
 * come as one `NULL` for the whole array: `unnest` pads it with `NULL`s to the length of the others.
 */
export const FLOW_JOBS = `unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::text[], $7::timestamptz[],
  $8::timestamptz[], $9::int[], $10::text[], $11::bigint[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[],
  $17::int[], $18::bigint[])
  WITH ORDINALITY AS u(id, name, version, payload, priority, job_order, run_at, created_at, max_attempts, backoff,
    lease_ms, replay_of, trace_context, job_group, parent_id, on_failure, pending, timeout_ms, ord)`;

/**
 * The insert of a flow's jobs into the jobs table of `schema` (quoted), from parallel arrays, one element per
 * job: $1 ids, $2 names, $3 versions, $4 payloads (JSON), $5 priorities, $6 orders, $7 run times, $8 creation
 * times, $9 attempt limits, $10 backoffs (JSON), $11 lease lengths, $12 the jobs they replay, $13 trace contexts
 * (JSON), $14 groups, $15 parent ids, $16 failure policies, $17 pending children, $18 time limits (null: none).
 * A job with pending children is inserted `waiting-children` (its `child_count` the same), every other one
 * waiting (delayed when due later). No idempotency or debounce key (a flow's root with a key goes in through
 * `insertFlowSql`). A taken id fails the statement, and nothing is inserted.
 */
export function insertFlowJobsSql(schema: string): string {
  return `INSERT INTO ${schema}.jobs (${FLOW_JOB_COLUMNS})
SELECT ${FLOW_JOB_VALUES}
FROM ${FLOW_JOBS}`;
}

/**
 * A whole flow in one `INSERT`, so in one round trip and atomic without a transaction: $1…$18 its jobs as
 * `insertFlowJobsSql` takes them, the root first; $19 the root's idempotency key and $20 the time it expires
 * (both null for none), $21 whether the key frees when the root finishes. Returns one row, `inserted`: how many
 * jobs it inserted, every one or none. None when a job holds the root's id, or a job of the root's type its
 * key: the statement looks for both first (two index probes), so that a flow sent again, the usual way to meet
 * a taken id or key, fails no statement (PostgreSQL logs every failed one as an `ERROR`). The caller then finds
 * the holder. A holder committed between those probes and the insert still fails the statement, on `jobs_pkey`
 * or `jobs_idempotency_idx` (`isTakenJobIdOrKey`), and nothing is inserted. No `ON CONFLICT`: a speculative
 * insert of the root and a second insert for the jobs below it cost PostgreSQL more than the whole flow in one.
 * Locks: the rows it inserts (and, on an id or key taken by a transaction not yet committed, it waits for that
 * one's end).
 */
export function insertFlowSql(schema: string): string {
  return `WITH inserted AS (
INSERT INTO ${schema}.jobs (${FLOW_JOB_COLUMNS}, idempotency_key, idempotency_expires_at,
  idempotency_until_finished)
SELECT ${FLOW_JOB_VALUES}, CASE WHEN u.ord = 1 THEN $19::text END, CASE WHEN u.ord = 1 THEN $20::timestamptz END,
  u.ord = 1 AND $21::boolean
FROM ${FLOW_JOBS}
WHERE NOT EXISTS (SELECT 1 FROM ${schema}.jobs AS h WHERE h.id = ($1::text[])[1])
  AND ($19::text IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${schema}.jobs AS h WHERE h.name = ($2::text[])[1] AND h.idempotency_key = $19::text))
RETURNING 1)
SELECT count(*)::int AS inserted FROM inserted`;
}
