import type { ClaimRequest, LeaseRef, LimitedClaim } from '../../engine/store.ts';
import type { SqlQueryable } from './connection.ts';
import { readiedParents } from './flows.ts';
import { toJsonText } from './records.ts';
import { type ClaimedRow, claimedColumnsOf, toClaimedRecord } from './sql/claim-jobs.ts';
import { readiedSql } from './sql/settle-parents.ts';

/**
 * $1 name, $2 now, $3 min version, $4 max version, $5 limit, $6 lease token, $7 worker id, $8 lease ms or null
 * (as `claim_under_limits`), $9 the acks' ids, $10 their lease tokens, $11 their results as JSON text (as
 * `complete_jobs`). `claim_under_limits` takes its `max_jobs` from the row of the acks' subquery, so it is called
 * only once `complete_jobs` has ended every lease it could; both are VOLATILE, so each of the claim's statements
 * sees those completions (and another limited claim of the type, waiting for the settings row, sees them only
 * once this commits). The jobs come first, in claim order; the last row carries the ids completed (and the
 * parents their ends made ready, `readied`), whether the type is paused and when its next start is possible.
 *
 * Completions wait for the WAL flush; claims do not (`claim_jobs` and `claim_under_limits` turn
 * `synchronous_commit` off for their transaction). This statement's transaction holds both, so it turns
 * `synchronous_commit` back on in its select list, which is computed from the claim function's rows and so
 * after the function has run: the commit then waits for the flush, and an ack the worker was told of survives a
 * database crash.
 */
export function completeAndClaimStatement(schema: string): string {
  return `SELECT CASE WHEN f.claim_order IS NULL THEN a.completed END AS completed, f.type_paused, f.next_start_ms,
  ${claimedColumnsOf('f')}, set_config('synchronous_commit', 'on', true) AS durable, ${readiedSql} AS readied
FROM (SELECT coalesce(array_agg(id), '{}') AS completed
  FROM ${schema}.complete_jobs($9::text[], $10::text[], $11::text[], $2::timestamptz) AS id) AS a
CROSS JOIN LATERAL ${schema}.claim_under_limits($1, $2::timestamptz, $3::int, $4::int,
  CASE WHEN a.completed IS NOT NULL THEN $5::int END, $6, $7, $8::bigint) AS f
ORDER BY f.claim_order NULLS LAST`;
}

type Row = ClaimedRow & {
  completed: string[] | null;
  type_paused: boolean;
  next_start_ms: string | number | null;
  readied: string | null;
};

/** `Store.completeAndClaimLimitedJobs`: one statement, `complete_jobs` then `claim_under_limits` (sql/). */
export async function completeAndClaimLimitedJobs(
  db: SqlQueryable,
  statement: string,
  jobs: readonly (LeaseRef & { result: unknown })[],
  request: ClaimRequest,
): Promise<{ completed: string[]; claim: LimitedClaim; readied: string[] }> {
  const { name, now, minVersion, maxVersion, limit, leaseToken, workerId, leaseMs } = request;
  const rows = await db.query<Row>(statement, [
    name,
    now,
    minVersion,
    maxVersion,
    limit,
    leaseToken,
    workerId,
    leaseMs,
    jobs.map((job) => job.id),
    jobs.map((job) => job.leaseToken),
    jobs.map((job) => toJsonText(job.result)),
  ]);
  const status = rows[rows.length - 1];
  const nextStartMs = status?.next_start_ms ?? null;
  return {
    readied: readiedParents(rows.slice(-1)),
    completed: status?.completed ?? [],
    claim: {
      jobs: rows.slice(0, -1).map((row) => toClaimedRecord(row, request)),
      paused: status?.type_paused ?? false,
      nextStartAt: nextStartMs === null ? null : new Date(Number(nextStartMs)),
    },
  };
}
