import type { JobRecord, NewJob } from './store.ts';

/**
 * The record a job has right after its insert: what was inserted, waiting,
 * with no attempt, lease or outcome yet. Stores whose insert reports only
 * which ids it created use it instead of reading the rows back. (Built field
 * by field: spreading `job` costs many times more on this hot path.)
 */
export function insertedRecord(job: NewJob): JobRecord {
  return {
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
    idempotencyKey: job.idempotencyKey,
    finishedAt: null,
    movedTo: null,
    replayOf: job.replayOf,
  };
}
