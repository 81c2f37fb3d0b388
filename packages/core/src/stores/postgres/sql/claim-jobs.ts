import type { ClaimedRecord, ClaimRequest } from '../../../engine/store.ts';
import { CLAIMED_JOB_COLUMNS } from '../../shared/claimed-columns.ts';
import { leaseExpiry } from '../../shared/inserted-record.ts';
import type { SqlStatement } from '../connection.ts';
import type { JobRow } from '../records.ts';

/**
 * What every claim sets of a job's lease, in a function with the parameters `due_by` and `lease_ms_override`:
 * the attempt's deadline (`due_by` + `timeout_ms`, `NULL` without a time limit) and the lease's expiry,
 * `due_by` plus `lease_ms_override` or the job's own `lease_ms`, but no later than the deadline (`least`
 * ignores a `NULL`).
 */
export const LEASE_UNTIL_DEADLINE = `attempt_deadline = due_by + j.timeout_ms * interval '1 millisecond',
    lease_expires_at = least(due_by + coalesce(lease_ms_override, j.lease_ms) * interval '1 millisecond',
      due_by + j.timeout_ms * interval '1 millisecond')`;

/**
 * `claim_jobs(job_name, due_by, min_version, max_version, max_jobs, new_lease_token, new_worker_id,
 * lease_ms_override)`: leases up to `max_jobs` ready jobs of `job_name` and returns their whole `jobs` rows
 * (in no particular order: the caller sorts them back into claim order).
 *
 * First it moves every due `delayed` job of the name into `waiting`, 1,000 at a time, earliest first, until none
 * is left that no other claim holds (usually once, moving nothing); a statement of its own, so that the lease,
 * the next statement, sees them. Then it leases the jobs `claimable_job_ids` picks: `active`, one more attempt,
 * the lease token and worker, a lease expiry of `due_by` plus `lease_ms_override` or the job's own `lease_ms`,
 * capped at the attempt's deadline (`LEASE_UNTIL_DEADLINE`).
 *
 * Locks: the moved delayed rows and the leased rows (`FOR UPDATE SKIP LOCKED`: concurrent claims skip each
 * other's jobs). Turns `synchronous_commit` off for its transaction: a claim lost in a database crash only
 * puts its jobs back in the queue, and fencing refuses the lost lease's token.
 */
export const CLAIM_JOBS = `
CREATE FUNCTION claim_jobs(job_name text, due_by timestamptz, min_version integer, max_version integer, max_jobs integer,
  new_lease_token text, new_worker_id text, lease_ms_override bigint)
RETURNS SETOF jobs LANGUAGE plpgsql VOLATILE ROWS 100
SET search_path FROM CURRENT
AS $body$ DECLARE moved integer; BEGIN
  PERFORM set_config('synchronous_commit', 'off', true); LOOP UPDATE jobs AS d SET state = 'waiting'
  WHERE d.id IN (SELECT s.id FROM jobs AS s WHERE s.state = 'delayed' AND s.name = job_name AND s.run_at <= due_by
    ORDER BY s.run_at LIMIT 1000 FOR UPDATE SKIP LOCKED); GET DIAGNOSTICS moved = ROW_COUNT; EXIT WHEN moved < 1000; END LOOP; RETURN QUERY UPDATE jobs AS j
  SET state = 'active', attempts = j.attempts + 1, lease_token = new_lease_token, worker_id = new_worker_id,
    ${LEASE_UNTIL_DEADLINE}, updated_at = due_by
  WHERE j.id IN (SELECT claimable_job_ids(job_name, due_by, min_version, max_version, max_jobs))
  RETURNING j.*; END $body$`;

/**
 * The plain claim: `claim_jobs`, or with `unlessHeld` its guard `claim_jobs_unless_held`
 * (sql/claim-jobs-unless-held.ts), which takes the same parameters and, when the type's settings hold its claims
 * back, returns one row without an id and leases nothing. Parameters: `claimParams`. The leased jobs come back
 * sorted into claim order, as `CLAIMED_JOB_COLUMNS`. Committed without waiting for the WAL flush (see
 * `claim_jobs`): no guarantee rests on a claim's durability.
 */
export function claimJobsSql(quotedSchema: string, unlessHeld: boolean): string {
  const fn = unlessHeld ? 'claim_jobs_unless_held' : 'claim_jobs';
  return `SELECT ${claimedColumnsOf('j')}
FROM ${quotedSchema}.${fn}($1, $2::timestamptz, $3::int, $4::int, $5::int, $6, $7, $8::bigint) AS j
ORDER BY j.priority DESC, j.order_key, j.order_tie`;
}

/** A claim statement (`claimJobsSql`) with the parameters of `request`. */
export function claimStatement(text: string, request: ClaimRequest): SqlStatement {
  const { name, now, minVersion, maxVersion, limit, leaseToken, workerId, leaseMs } = request;
  return { text, params: [name, now, minVersion, maxVersion, limit, leaseToken, workerId, leaseMs] };
}

/**
 * What a claim reads of each job: `CLAIMED_JOB_COLUMNS`, how many children it has had (`ctx.resumed`), and its
 * parent (its events name it).
 */
const CLAIMED_COLUMNS = [...CLAIMED_JOB_COLUMNS, 'child_count', 'parent_id'] as const;

/** The columns of a claimed job read from `source`, a row source with the `jobs` columns: what every claim returns. */
export function claimedColumnsOf(source: string): string {
  return CLAIMED_COLUMNS.map((column) => `${source}.${column}`).join(', ');
}

/** A row of `claimedColumnsOf`. */
export type ClaimedRow = Pick<JobRow, (typeof CLAIMED_COLUMNS)[number]>;

/**
 * A claimed row as the engine takes it, completed from its claim: the name, token and expiry every job of the
 * claim shares. Every claim of this store, plain or limited, returns its jobs through it.
 */
export function toClaimedRecord(row: ClaimedRow, claim: ClaimRequest): ClaimedRecord {
  const leaseMs = Number(row.lease_ms);
  const timeoutMs = row.timeout_ms === null ? null : Number(row.timeout_ms);
  const claimed: ClaimedRecord = {
    id: row.id,
    name: claim.name,
    version: row.version,
    payload: row.payload,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    leaseMs,
    leaseToken: claim.leaseToken,
    leaseExpiresAt: leaseExpiry({ leaseMs, timeoutMs }, claim),
    progress: row.progress,
    runAt: row.run_at,
    traceContext: row.trace_context,
  };
  if (timeoutMs !== null) claimed.timeoutMs = timeoutMs;
  if (row.child_count > 0) claimed.childCount = row.child_count;
  if (row.parent_id !== null) claimed.parentId = row.parent_id;
  return claimed;
}
