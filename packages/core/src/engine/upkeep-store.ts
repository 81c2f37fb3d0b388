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

  /** Deletes up to `limit` finished jobs with `finishedAt < finishedBefore`. Resolves to how many. */
  pruneJobs(finishedBefore: Date, limit: number): Promise<number>;
}
