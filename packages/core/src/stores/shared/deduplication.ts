import type { JobRecord, NewJob } from '../../engine/store.ts';

/**
 * Whether the job holding `job`'s idempotency key let it expire by the time `job` was made: its
 * `idempotencyExpiresAt` is at or before `job.createdAt` (see `Store.insertJobs`).
 */
export function keyExpired(holder: Pick<JobRecord, 'idempotencyExpiresAt'>, job: Pick<NewJob, 'createdAt'>): boolean {
  return holder.idempotencyExpiresAt !== null && holder.idempotencyExpiresAt.getTime() <= job.createdAt.getTime();
}
