import { isFinishedState, type JobState, type JobStatus } from '../jobs.ts';
import type { JobRecord } from './store.ts';
import { fromStoredValue } from './stored-value.ts';

/** The user-visible state: `waiting` splits into `scheduled` and `ready` by the clock. */
export function visibleState(job: Pick<JobRecord, 'state' | 'runAt'>, now: Date): JobState {
  if (job.state !== 'waiting') return job.state;
  return job.runAt.getTime() > now.getTime() ? 'scheduled' : 'ready';
}

/**
 * What users see of `job` at `now`. With `errors`, every kept attempt's error too (`JobStatus.errors`): one
 * job's page shows them, a listing of many leaves them out.
 */
export function toJobStatus(job: JobRecord, now: Date, include: { errors?: boolean } = {}): JobStatus {
  const status: JobStatus = {
    id: job.id,
    name: job.name,
    version: job.version,
    state: visibleState(job, now),
    priority: job.priority,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    progress: job.progress,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    runAt: job.runAt,
  };
  if (job.state === 'completed' && job.result !== null && job.result !== undefined)
    status.result = fromStoredValue(job.result);
  if (job.error) status.error = job.error;
  if (include.errors && job.errors.length > 0) status.errors = job.errors;
  // A key held until its job finished is free once it has: the job shows it no more.
  const keyHeld = job.idempotencyKey !== null && !(job.idempotencyUntilFinished && isFinishedState(job.state));
  if (keyHeld) status.idempotencyKey = job.idempotencyKey as string;
  if (keyHeld && job.idempotencyExpiresAt) status.idempotencyExpiresAt = job.idempotencyExpiresAt;
  if (keyHeld && job.idempotencyUntilFinished) status.idempotencyUntil = 'finished';
  if (job.debounceKey) status.debounceKey = job.debounceKey;
  if (job.finishedAt) status.finishedAt = job.finishedAt;
  if (job.state === 'active' && job.leaseExpiresAt) status.leaseExpiresAt = job.leaseExpiresAt;
  if (job.movedTo) status.movedTo = job.movedTo;
  if (job.replayOf) status.replayOf = job.replayOf;
  if (job.movedFrom) status.movedFrom = job.movedFrom;
  if (job.group) status.group = job.group;
  if (job.retainCompletedMs != null || job.retainDeadMs != null) {
    status.retention = {};
    if (job.retainCompletedMs != null) status.retention.completedMs = job.retainCompletedMs;
    if (job.retainDeadMs != null) status.retention.deadMs = job.retainDeadMs;
  }
  if (job.parentId) status.parentId = job.parentId;
  if (job.parentId && job.onFailure) status.onFailure = job.onFailure;
  if (job.childCount) status.childCount = job.childCount;
  if (job.pendingChildren && job.state === 'waiting-children') status.pendingChildren = job.pendingChildren;
  return status;
}
