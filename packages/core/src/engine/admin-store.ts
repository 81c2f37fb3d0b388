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

  /**
   * Runs a completed job again in place (`admin.retry`): `completed` → waiting, due at `now` in the claim
   * order of a job enqueued then, with its attempts, result, last error, progress, finish time, lease and
   * `movedTo` cleared; its id, payload, options and kept error history stay. Only a job outside flows (no
   * parent, no children). Atomic: a job that is not completed, or not outside flows, is left as it is.
   * Resolves to the job as it now is, or `null` when nothing changed.
   */
  rerunCompletedJob(id: string, now: Date): Promise<JobRecord | null>;

  /**
   * Puts a cancelled job that never started back to waiting (`admin.restore`): `cancelled` with no attempt
   * counted, outside flows, waits again at its own run time (scheduled when that is after `now`) and order
   * key, its finish time cleared. Atomic, like `rerunCompletedJob`. Resolves to the job as it now is, or
   * `null` when nothing changed.
   */
  restoreCancelledJob(id: string, now: Date): Promise<JobRecord | null>;

  /**
   * Deletes the job of type `name` that holds idempotency key `key` (`admin.removeByKey`) when it has not
   * started (waiting or scheduled, retries included) and is outside flows; its key is free once this
   * resolves. Atomic: a job claimed at the same moment is either deleted before the claim can lease it or
   * leased and left. Resolves to the deleted job, or `null` when nothing was deleted.
   */
  removeJobByKey(name: string, key: string): Promise<JobRecord | null>;
}
