import type { JobError } from '../jobs.ts';
import type { SweptLease } from './store-records.ts';

/**
 * The maintenance roles' part of the storage contract: the lease sweep takes back the leases of workers that
 * went away, the pruner deletes the history kept past its retention. Both are written to stay correct when
 * two servers run them at once (see `LeaderElection`).
 */
export interface UpkeepStore {
  /**
   * `active` jobs whose lease expired before `now` lose it: back to `waiting`
   * in their place (run time and order key kept, so a crashed worker's job
   * does not go behind the jobs enqueued since), or `dead` when
   * `attempts >= maxAttempts`. The lost lease is
   * recorded as the error `error` (its `attempt` set from the job), last
   * error and appended to `errors`, as `failJob` records one.
   * Resolves to the jobs this call swept, each once.
   */
  requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>): Promise<SweptLease[]>;

  /**
   * Deletes up to `limit` finished jobs past their retention, the oldest of each kind first: a job that
   * completed with a `retainCompletedMs`, or went dead with a `retainDeadMs`, once `finishedAt` + that is at or
   * before `now`; any other finished job (cancelled ones included) when `finishedAt < finishedBefore`. Both
   * kinds are found through an index, so jobs kept longer cost no reads. Resolves to how many it deleted.
   */
  pruneJobs(finishedBefore: Date, limit: number, now: Date): Promise<number>;
}
