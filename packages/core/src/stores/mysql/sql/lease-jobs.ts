/**
 * Lease jobs: the claim's last step. Leases the jobs a claim's transaction locked to the claiming worker.
 *
 * Takes their ids and the `ClaimRequest` (token, worker, now, and `leaseMs`, or null for each job's own);
 * one `UPDATE … WHERE id IN (…)`, which sets the state `active`, the token, the expiry and the worker, and
 * counts the attempt. A job with a time limit gets its attempt's deadline (now + `timeout_ms`), and its lease
 * ends no later (`LEAST` of a `NULL` is `NULL`, hence the `COALESCE`: without a limit, the lease as asked). Locks: nothing more than the claim holds. Guarantees: what the claim read of each row
 * stays true but for the attempts and the lease, which `claimedRecord` adds.
 */
import type { ClaimRequest } from '../../../engine/store.ts';
import { execute, type Queryable } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function leaseJobs(c: Queryable, t: Tables, ids: readonly string[], request: ClaimRequest): Promise<void> {
  const { now } = request;
  const expiry =
    request.leaseMs === null
      ? { sql: 'TIMESTAMPADD(MICROSECOND, lease_ms * 1000, CAST(? AS DATETIME(3)))', value: sqlDate(now) }
      : { sql: '?', value: sqlDate(new Date(now.getTime() + request.leaseMs)) };
  await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'active', lease_token = ?,
       attempt_deadline = TIMESTAMPADD(MICROSECOND, timeout_ms * 1000, CAST(? AS DATETIME(3))),
       lease_expires_at = COALESCE(LEAST(${expiry.sql}, attempt_deadline), ${expiry.sql}),
       worker_id = ?, attempts = attempts + 1, updated_at = ?
     WHERE id IN (?)`,
    [request.leaseToken, sqlDate(now), expiry.value, expiry.value, request.workerId, sqlDate(now), ids],
  );
}
