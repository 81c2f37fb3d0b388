import type { JobCount, JobRecord } from './store-records.ts';

/**
 * What a job count covers: every state, or only the live ones (`scheduled`, `ready`, `active`), which a store
 * can count without reading finished history. Frequent counts (metrics) take `'live'`.
 */
export type CountScope = 'all' | 'live';

/**
 * The operator's part of the storage contract (`admin.*`, the dashboard and the metrics): counts, and the
 * explicit moves an operator makes on jobs that no worker holds. Each operation is one atomic step.
 */
export interface AdminStore {
  /**
   * Job counts by name, version and user-visible state (`scheduled`/`ready` split by `now`). With scope
   * `'live'` only jobs not finished need counting: a store whose count of finished jobs reads their history
   * leaves those rows out, and the engine drops any a store returns (see `Engine.counts`). @defaultValue 'all'
   */
  countJobs(now: Date, scope?: CountScope): Promise<JobCount[]>;

  /** `dead` → `waiting` at `now` with attempts reset, for the given ids or all dead jobs of `name`. Resolves to how many. */
  retryDeadJobs(target: { name?: string; ids?: readonly string[] }, now: Date): Promise<number>;

  /**
   * Makes a scheduled job (not started, due after `now`: delayed, or waiting out a retry's backoff) due at
   * `now`, in the claim order of a job enqueued to run then; its attempts and everything else stay. Atomic:
   * a job claimed, cancelled or due meanwhile is left as it is. Resolves to the job as it now is, or `null`
   * when it was not scheduled (or is gone).
   */
  promoteJob(id: string, now: Date): Promise<JobRecord | null>;
}
