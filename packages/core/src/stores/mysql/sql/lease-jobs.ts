/**
 * Lease jobs: the claim's last step. Leases the jobs a claim's transaction locked to the claiming worker.
 *
 * Takes the rows the claim's locking read returned (their ids, `lease_ms` and `timeout_ms`) and the
 * `ClaimRequest` (token, worker, now, and `leaseMs`, or null for each job's own); one
 * `UPDATE … WHERE id IN (…)`, which sets the state `active`, the token, the expiry and the worker, and counts the
 * attempt. A job with a time limit gets its attempt's deadline (now + `timeout_ms`), and its lease ends no later
 * (`leaseExpiry`). When the jobs share their lease length and time limit, as a type's jobs usually do, the
 * statement sets both times as values, computed here as `claimedRecord` computes what the worker is handed;
 * otherwise from each row's columns (`LEAST` of a `NULL` is `NULL`, hence the `COALESCE`: without a limit, the
 * lease as asked). Locks: nothing more than the claim holds. Guarantees: what the claim read of each row stays
 * true but for the attempts and the lease, which `claimedRecord` adds.
 */
import type { RowDataPacket } from 'mysql2/promise';
import type { ClaimRequest } from '../../../engine/store.ts';
import { leaseExpiry } from '../../shared/inserted-record.ts';
import { execute, type Queryable } from '../connection.ts';
import { sqlDate, timeoutOf } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function leaseJobs(
  c: Queryable,
  t: Tables,
  rows: readonly RowDataPacket[],
  request: ClaimRequest,
): Promise<void> {
  const { now } = request;
  const ids = rows.map((row) => String(row.id));
  const shared = sharedLimits(rows, request);
  const times =
    shared === null
      ? leaseTimesOfRows(request)
      : {
          deadline: { sql: '?', values: [timeAfter(now, shared.timeoutMs)] },
          expiry: { sql: '?', values: [sqlDate(leaseExpiry(shared, request))] },
        };
  await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'active', lease_token = ?, attempt_deadline = ${times.deadline.sql},
       lease_expires_at = ${times.expiry.sql}, worker_id = ?, attempts = attempts + 1, updated_at = ?
     WHERE id IN (?)`,
    [request.leaseToken, ...times.deadline.values, ...times.expiry.values, request.workerId, sqlDate(now), ids],
  );
}

/** The lease length and time limit every row leases under, or null when they differ. */
function sharedLimits(
  rows: readonly RowDataPacket[],
  request: ClaimRequest,
): { leaseMs: number; timeoutMs: number | null } | null {
  const [first] = rows;
  if (first === undefined) return null;
  const leaseMs = Number(first.lease_ms);
  const timeoutMs = timeoutOf(first);
  for (const row of rows) {
    if (timeoutOf(row) !== timeoutMs) return null;
    if (request.leaseMs === null && Number(row.lease_ms) !== leaseMs) return null;
  }
  return { leaseMs, timeoutMs };
}

function timeAfter(now: Date, ms: number | null): string | null {
  return ms === null ? null : sqlDate(new Date(now.getTime() + ms));
}

/** The deadline and expiry computed by the statement from each row's `timeout_ms` and `lease_ms`. */
function leaseTimesOfRows(request: ClaimRequest): Record<'deadline' | 'expiry', { sql: string; values: unknown[] }> {
  const at = sqlDate(request.now);
  const lease =
    request.leaseMs === null
      ? { sql: 'TIMESTAMPADD(MICROSECOND, lease_ms * 1000, CAST(? AS DATETIME(3)))', value: at }
      : { sql: '?', value: sqlDate(new Date(request.now.getTime() + request.leaseMs)) };
  return {
    deadline: { sql: 'TIMESTAMPADD(MICROSECOND, timeout_ms * 1000, CAST(? AS DATETIME(3)))', values: [at] },
    expiry: {
      sql: `COALESCE(LEAST(${lease.sql}, attempt_deadline), ${lease.sql})`,
      values: [lease.value, lease.value],
    },
  };
}
