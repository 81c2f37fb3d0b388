import { notStartedSql, orderKeySql } from '../sql-fragments.ts';

/**
 * The insert of a flow's jobs into the jobs table of `schema` (quoted), from parallel text arrays, one element per
 * job: $1 ids, $2 names, $3 versions, $4 payloads (JSON), $5 priorities, $6 orders, $7 run times, $8 creation
 * times, $9 attempt limits, $10 backoffs (JSON), $11 lease lengths, $12 the jobs they replay, $13 trace contexts
 * (JSON), $14 groups, $15 parent ids, $16 failure policies, $17 pending children. A job with pending children is
 * inserted `waiting-children` (its `child_count` the same), every other one waiting (delayed when due later).
 * No idempotency or debounce key: only a flow's root takes one, inserted on its own first (`insertFlow`).
 * Each value is cast in its own row; a flow is inserted once, so no parse is worth sharing.
 */
export function insertFlowJobsSql(schema: string): string {
  const [runAt, createdAt] = ['u.run_at::timestamptz', 'u.created_at::timestamptz'];
  return `INSERT INTO ${schema}.jobs (id, name, version, payload, state, priority, job_order, order_key, run_at,
  created_at, updated_at, max_attempts, backoff, lease_ms, replay_of, trace_context, job_group, parent_id, on_failure,
  child_count, pending_children)
SELECT u.id, u.name, u.version::int, u.payload::jsonb,
  CASE WHEN u.pending::int > 0 THEN 'waiting-children' ELSE ${notStartedSql(runAt, createdAt)} END,
  u.priority::int, u.job_order, ${orderKeySql('u.job_order', runAt)}, ${runAt}, ${createdAt}, ${createdAt},
  u.max_attempts::int, u.backoff::jsonb, u.lease_ms::bigint, u.replay_of, u.trace_context::jsonb, u.job_group,
  u.parent_id, u.on_failure, u.pending::int, u.pending::int
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
  $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[])
  AS u(id, name, version, payload, priority, job_order, run_at, created_at, max_attempts, backoff, lease_ms,
    replay_of, trace_context, job_group, parent_id, on_failure, pending)`;
}
