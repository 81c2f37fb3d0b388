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
