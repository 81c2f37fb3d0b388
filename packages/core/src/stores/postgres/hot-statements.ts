import { newJobId } from '../../engine/ids.ts';
import type { ClaimRequest, LeaseRef, NewJob } from '../../engine/store.ts';
import { leaseExpiry } from '../shared/inserted-record.ts';
import type { SqlStatement } from './connection.ts';
import { insertStatement } from './insert-jobs.ts';
import { newJobValues, toJsonText } from './records.ts';
import { claimStatement } from './sql/claim-jobs.ts';
import type { Statements } from './statements.ts';

/** `Store.completeJobs`'s statement: the leases' ids, tokens and results as arrays, then `now`. */
export function completeStatement(
  sql: Statements,
  jobs: readonly (LeaseRef & { result: unknown })[],
  now: Date,
): SqlStatement {
  const ids = jobs.map((job) => job.id);
  const tokens = jobs.map((job) => job.leaseToken);
  const results = jobs.map((job) => toJsonText(job.result));
  return { text: sql.completeJobs, params: [ids, tokens, results, now] };
}

/** The handoff's statement (`insertAndClaimJobSql`): `job` inserted, and leased to `claim` when it may be. */
export function insertAndClaimStatement(sql: Statements, job: NewJob, claim: ClaimRequest): SqlStatement {
  const { now, minVersion, maxVersion, leaseToken, workerId } = claim;
  const params = [...newJobValues(job), now, minVersion, maxVersion, leaseToken, workerId, leaseExpiry(job, claim)];
  const text = job.idempotencyKey === null ? sql.insertAndClaimJob : sql.insertAndClaimKeyedJob;
  return { text, params };
}

/**
 * The enqueue, claim, complete and handoff statements, run once on a new
 * connection (in a transaction that is rolled back), so the first jobs skip
 * its parses and catalog loads. Only the handoff inserts (with and without
 * an idempotency key) write rows: throwaway jobs with fresh ids and keys, so
 * connections warming at once do not wait on each other's uncommitted key.
 * `claimText` is the claim statement the engine runs (`claimJobsSql`).
 */
export function warmUpStatements(sql: Statements, claimText: string): SqlStatement[] {
  const epoch = new Date(0);
  const throwaway: NewJob = {
    id: newJobId(),
    name: '',
    version: 1,
    payload: null,
    priority: 0,
    order: 'fifo',
    runAt: epoch,
    createdAt: epoch,
    maxAttempts: 1,
    backoff: { type: 'fixed', delayMs: 0 },
    leaseMs: 1,
    idempotencyKey: null,
    idempotencyExpiresAt: null,
    debounceKey: null,
    replayOf: null,
    traceContext: null,
  };
  const claimNothing: ClaimRequest = {
    name: '',
    minVersion: 0,
    maxVersion: 0,
    limit: 0,
    leaseToken: '',
    workerId: '',
    leaseMs: null,
    now: epoch,
  };
  return [
    insertStatement(sql, []),
    claimStatement(claimText, claimNothing),
    completeStatement(sql, [], epoch),
    insertAndClaimStatement(sql, throwaway, claimNothing),
    insertAndClaimStatement(sql, { ...throwaway, id: newJobId(), idempotencyKey: newJobId() }, claimNothing),
  ];
}
