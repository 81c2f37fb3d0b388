import type { ClaimRequest, JobRecord, NewJob } from '../../engine/store.ts';

/**
 * The record a job has right after its insert: what was inserted, waiting,
 * with no attempt, lease or outcome yet. Stores whose insert reports only
 * which ids it created use it instead of reading the rows back. (Built field
 * by field, not by spreading `job`: this runs for every inserted job.)
 */
export function insertedRecord(job: NewJob): JobRecord {
  const record: JobRecord = {
    id: job.id,
    name: job.name,
    version: job.version,
    payload: job.payload,
    state: 'waiting',
    priority: job.priority,
    order: job.order,
    runAt: job.runAt,
    createdAt: job.createdAt,
    updatedAt: job.createdAt,
    attempts: 0,
    maxAttempts: job.maxAttempts,
    backoff: job.backoff,
    leaseMs: job.leaseMs,
    leaseToken: null,
    leaseExpiresAt: null,
    workerId: null,
    progress: 0,
    result: null,
    error: null,
    errors: [],
    idempotencyKey: job.idempotencyKey,
    idempotencyExpiresAt: job.idempotencyExpiresAt,
    debounceKey: job.debounceKey,
    finishedAt: null,
    movedTo: null,
    replayOf: job.replayOf,
    movedFrom: job.movedFrom ?? null,
    traceContext: job.traceContext,
    group: job.group ?? null,
  };
  if (job.idempotencyUntilFinished) record.idempotencyUntilFinished = true;
  // A retention of its own only on a job that has one: a plain job reads back as it was inserted.
  if (job.retainCompletedMs != null || job.retainDeadMs != null) {
    record.retainCompletedMs = job.retainCompletedMs ?? null;
    record.retainDeadMs = job.retainDeadMs ?? null;
  }
  if (job.timeoutMs != null) record.timeoutMs = job.timeoutMs;
  return record;
}

/**
 * The record a job has right after an insert that leased it to `claim`
 * (see `Handoff.insertAndClaimJob`): active, in its first attempt.
 */
export function handedRecord(job: NewJob, claim: ClaimRequest): JobRecord {
  const record = insertedRecord(job);
  record.state = 'active';
  record.attempts = 1;
  record.updatedAt = claim.now;
  record.leaseToken = claim.leaseToken;
  record.leaseExpiresAt = leaseExpiry(job, claim);
  if (job.timeoutMs != null) record.attemptDeadline = new Date(claim.now.getTime() + job.timeoutMs);
  record.workerId = claim.workerId;
  return record;
}

/**
 * Whether `claim` could take `job` as it is inserted: due at the claim's time, within its versions, a plain job
 * (no children waited for). A handoff leases it only then (see `Handoff.insertAndClaimJob`), and only when no
 * job the claim could take is ready or due first.
 */
export function claimCouldTake(job: NewJob, claim: ClaimRequest): boolean {
  return (
    job.runAt.getTime() <= claim.now.getTime() &&
    job.version >= claim.minVersion &&
    job.version <= claim.maxVersion &&
    (job.pendingChildren ?? 0) === 0
  );
}

/**
 * When a lease taken by `claim` on `job` expires: after the claim's lease length, or the job's own, but no later
 * than the attempt's deadline (the claim's time + the job's `timeoutMs`), as every claim sets it.
 */
export function leaseExpiry(job: Pick<NewJob, 'leaseMs' | 'timeoutMs'>, claim: ClaimRequest): Date {
  const lengthMs = claim.leaseMs ?? job.leaseMs;
  const timeoutMs = job.timeoutMs ?? lengthMs;
  return new Date(claim.now.getTime() + Math.min(lengthMs, timeoutMs));
}
