/** SQL expressions the job statements share. */

/** SQL for `order_key` from an order and a run time (both SQL expressions): run time in ms, negated for `lifo`. */
export function orderKeySql(order: string, runAt: string): string {
  return `(CASE WHEN ${order} = 'lifo' THEN -1 ELSE 1 END * floor(extract(epoch FROM ${runAt}) * 1000)::bigint)`;
}

/**
 * The stored state of a job not yet started that runs at `runAt`, written at `now` (SQL expressions):
 * `delayed` when it is due later, kept out of the claim index until a claim finds it due (`claim_jobs`).
 */
export function notStartedSql(runAt: string, now: string): string {
  return `CASE WHEN ${runAt} > ${now} THEN 'delayed' ELSE 'waiting' END`;
}

/** Stored states of a job not yet started: both are the engine's `waiting`. */
export const NOT_STARTED_SQL = `('delayed', 'waiting')`;

/**
 * Whether the job type `name` (an SQL expression) has settings in `settings` (the qualified `queue_settings`)
 * that hold its claims back at `now` (an SQL expression): paused, a limit set, grouped, or held. One primary-key
 * lookup. The insert that hands its
 * job over checks it in its own statement, as the plain claim checks it in `claim_jobs_unless_held`, so only the
 * limited claim (`claim_under_limits`) leases jobs of such a type, whatever a server's copy of the settings says.
 */
export function claimsHeldBackSql(settings: string, name: string, now: string): string {
  return `EXISTS (SELECT 1 FROM ${settings} AS q WHERE q.name = ${name}
    AND (q.paused OR q.grouped OR q.concurrency IS NOT NULL OR q.rate_max IS NOT NULL OR q.group_concurrency IS NOT NULL
      OR q.held_until > ${now}::timestamptz))`;
}
