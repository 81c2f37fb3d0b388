import { notStartedSql, orderKeySql } from '../sql-fragments.ts';

/** The columns a flow's job is inserted with, in the order of `FLOW_JOB_VALUES`. */
export const FLOW_JOB_COLUMNS = `id, name, version, payload, state, priority, job_order, order_key, run_at, created_at, updated_at,
  max_attempts, backoff, lease_ms, replay_of, trace_context, job_group, parent_id, on_failure, child_count,
  pending_children, timeout_ms`;

const [RUN_AT, CREATED_AT] = ['u.run_at::timestamptz', 'u.created_at::timestamptz'];

/** A flow job's values from its row `u` of `FLOW_JOBS`: a parent `waiting-children`, any other job waiting or delayed. */
export const FLOW_JOB_VALUES = `u.id, u.name, u.version::int, u.payload::jsonb,
  CASE WHEN u.pending::int > 0 THEN 'waiting-children' ELSE ${notStartedSql(RUN_AT, CREATED_AT)} END,
  u.priority::int, u.job_order, ${orderKeySql('u.job_order', RUN_AT)}, ${RUN_AT}, ${CREATED_AT}, ${CREATED_AT},
  u.max_attempts::int, u.backoff::jsonb, u.lease_ms::bigint, u.replay_of, u.trace_context::jsonb, u.job_group,
  u.parent_id, u.on_failure, u.pending::int, u.pending::int, u.timeout_ms::bigint`;

/** The jobs `$1`…`$18` describe, one row `u` each, numbered by `ord` in the order given. */
export const FLOW_JOBS = `unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
  $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
  $18::text[])
  WITH ORDINALITY AS u(id, name, version, payload, priority, job_order, run_at, created_at, max_attempts, backoff,
    lease_ms, replay_of, trace_context, job_group, parent_id, on_failure, pending, timeout_ms, ord)`;

/**
 * The insert of a flow's jobs into the jobs table of `schema` (quoted), from parallel text arrays, one element per
 * job: $1 ids, $2 names, $3 versions, $4 payloads (JSON), $5 priorities, $6 orders, $7 run times, $8 creation
 * times, $9 attempt limits, $10 backoffs (JSON), $11 lease lengths, $12 the jobs they replay, $13 trace contexts
 * (JSON), $14 groups, $15 parent ids, $16 failure policies, $17 pending children, $18 time limits (null: none). A job with pending children is
 * inserted `waiting-children` (its `child_count` the same), every other one waiting (delayed when due later).
 * No idempotency or debounce key (a flow's root with a key goes in through `insertFlowSql`). A taken id fails the
 * statement, and nothing is inserted. Each value is cast in its own row; a flow is inserted once, so no parse is
 * worth sharing.
 */
export function insertFlowJobsSql(schema: string): string {
  return `INSERT INTO ${schema}.jobs (${FLOW_JOB_COLUMNS})
SELECT ${FLOW_JOB_VALUES}
FROM ${FLOW_JOBS}`;
}

/**
 * A whole flow in one statement, so in one round trip and atomic without a transaction: $1…$18 its jobs as
 * `insertFlowJobsSql` takes them, the root first; $19 the root's idempotency key and $20 the time it expires
 * (both null for none), $21 whether the key frees when the root finishes. The root goes in unless a job of its type holds its key (then nothing is inserted), the
 * other jobs only with it. Returns one row, `created`: whether the flow went in. A taken id fails the statement,
 * and nothing is inserted. Locks: the rows it inserts (and, on a key taken by a transaction not yet committed,
 * it waits for that one's end).
 */
export function insertFlowSql(schema: string): string {
  return `WITH u AS (SELECT * FROM ${FLOW_JOBS}), root AS (
  INSERT INTO ${schema}.jobs AS j (${FLOW_JOB_COLUMNS}, idempotency_key, idempotency_expires_at,
    idempotency_until_finished)
  SELECT ${FLOW_JOB_VALUES}, $19::text, $20::timestamptz, $21::boolean FROM u WHERE u.ord = 1
  ON CONFLICT (name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
  RETURNING j.id
), below AS (
  INSERT INTO ${schema}.jobs (${FLOW_JOB_COLUMNS})
  SELECT ${FLOW_JOB_VALUES} FROM u WHERE u.ord > 1 AND EXISTS (SELECT 1 FROM root)
)
SELECT EXISTS (SELECT 1 FROM root) AS created`;
}
