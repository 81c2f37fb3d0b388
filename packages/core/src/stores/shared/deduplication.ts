import type { JobRecord, NewJob } from '../../engine/store.ts';
import { isFinishedState } from '../../jobs.ts';

/**
 * Whether the job holding `job`'s idempotency key has let go of it by the time `job` was made (see
 * `Store.insertJobs`): its `idempotencyExpiresAt` is at or before `job.createdAt`, or it holds its key until it
 * finishes (`idempotencyUntilFinished`) and has completed, died or been cancelled.
 */
export function keyExpired(
  holder: Pick<JobRecord, 'idempotencyExpiresAt' | 'idempotencyUntilFinished' | 'state'>,
  job: Pick<NewJob, 'createdAt'>,
): boolean {
  if (holder.idempotencyUntilFinished === true && isFinishedState(holder.state)) return true;
  return holder.idempotencyExpiresAt !== null && holder.idempotencyExpiresAt.getTime() <= job.createdAt.getTime();
}
