import type { JobError } from '../jobs.ts';
import type {
  ClaimedRecord,
  ClaimRequest,
  InsertOutcome,
  JobRead,
  JobRecord,
  LeaseRef,
  ListFilter,
  NewJob,
} from './store-records.ts';

/**
 * The jobs' storage contract: what every store does, in sixteen operations
 * (enqueue, claim, end, snooze or extend a lease, move, cancel, read, health, close).
 * Each operation is one atomic semantic step; stores never read the clock
 * (every time comes in as `now`) and never decide policy (retries, backoff,
 * retention are the engine's). What only the maintenance roles and the
 * operator do is in `UpkeepStore` and `AdminStore`; what only some stores
 * can do is in the optional parts of `Store`.
 */
export interface JobStore {
  /** A short name for logs and test titles, e.g. `postgres`. */
  readonly kind: string;

  /**
   * Inserts jobs in one round trip where the store allows. No two jobs of one
   * call share an id or a `(name, idempotencyKey)`: the engine resolves
   * repeats within a batch before it calls. A job whose id is taken (the
   * caller's or the SDK's choice, sent again) is not inserted; the job holding
   * the id is returned with `created: false`, whatever its type or payload
   * (the engine tells the same job from a different one), or `KeyHolderGone`
   * when it vanished before the store could read it. Otherwise, a job whose
   * `(name, idempotencyKey)` matches a
   * retained job is not inserted; that job is returned with `created: false`,
   * or, when it vanished before the store could read it, `KeyHolderGone`.
   * A holder whose `idempotencyExpiresAt` is at or before the job's
   * `createdAt`, or that holds its key until it finishes
   * (`idempotencyUntilFinished`) and has completed, died or been cancelled,
   * has let go of the key: the store clears the key on it (only while that
   * still holds) and answers `KeyHolderGone`. Each job is inserted
   * or not on its own; the ones inserted are durable before it resolves.
   * Outcomes are in input order. Jobs with a `debounceKey` go to `debounceJobs`.
   */
  insertJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]>;

  /**
   * Inserts jobs that carry a `debounceKey` (no two of one call share a
   * `(name, debounceKey)`: the engine merges repeats first). Each job, in one
   * atomic step of its own: when a job of its name holds that debounce key
   * and has not started (waiting, no attempts), it is changed as the job's
   * `debounceMode` says and returned with `created: false`: `replace` (the
   * default) gives it this one's payload, version, priority, attempts limit,
   * backoff, lease length, retention and run time (it keeps its id, creation time, order
   * and attempts); `preserveRunAt` all of those but the run time; `keepFirst`
   * nothing; when no job holds the key, this one is inserted with
   * it (`created: true`); when the holder has started (even if it waits for a
   * retry now) or finished, the store
   * clears the key on it and answers `KeyHolderGone`, so the engine sends the
   * job again. A claim and a debounce of one job never both take effect on
   * the job as it was: the claimed job keeps its payload, and the debounce
   * then makes a new job. Durable before it resolves; outcomes in input order.
   */
  debounceJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]>;

  /**
   * Atomically leases up to `limit` ready jobs (state `waiting`, `runAt <= now`)
   * of `name` within the version range: highest priority first, then by
   * `runAt` (oldest first for `fifo`, newest first for `lifo`). Sets state
   * `active`, the lease token and expiry, the worker id, and increments
   * `attempts`. Never returns a job to two claims. Resolves to the jobs in
   * that order. A store may return whole records; only the claimed fields
   * are read.
   */
  claimJobs(request: ClaimRequest): Promise<ClaimedRecord[]>;

  /**
   * Fenced, per job: `active` → `completed` with `result`, ending the lease
   * but keeping its token on the record. Each job is completed or not on its
   * own. Resolves to the ids that were completed: those their token held.
   */
  completeJobs(jobs: readonly (LeaseRef & { result: unknown })[], now: Date): Promise<string[]>;

  /**
   * Fenced, per job: gives leased jobs back as if they had not been claimed,
   * for a claim whose client went away before it was answered: `waiting`
   * again in their place in the queue, the lease ended and its attempt not
   * counted. Resolves to the ids that were released.
   */
  releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]>;

  /**
   * Fenced, one atomic write: records `error` as the job's last error and
   * appends it to `errors` (keeping the latest `ERROR_HISTORY_LIMITS.attempts`;
   * a job stored before `errors` existed starts it from its last error), and either returns the job to
   * `waiting` at `retryAt` (its order key following), or, when `retryAt` is
   * `null`, makes it `dead` with `finishedAt` `now`; the lease ends either
   * way. Resolves to whether the lease held and the change was made (the
   * engine knows the outcome it asked for, so no record is returned).
   */
  failJob(lease: LeaseRef, outcome: { error: JobError; retryAt: Date | null }, now: Date): Promise<boolean>;

  /**
   * Fenced, one atomic write: the held job waits again, to run at `runAt` (`ctx.delay`, `ctx.retryAt`), as if
   * this attempt had not been made: `attempts` down by one, no error recorded, the lease ended (token, expiry
   * and worker cleared), its run time `runAt` and its order key following it. It has started, so it gives up its
   * debounce key (`debounceKey` cleared): a later debounce of the key makes a new job and leaves this one as it
   * is (as graphile-worker's `job_key` does an attempted job). Its id, payload, errors and flow links stay as
   * they are. Resolves to whether the lease held; when it did not, nothing changed.
   */
  snoozeJob(lease: LeaseRef, runAt: Date, now: Date): Promise<boolean>;

  /**
   * Fenced, one atomic write: moves the lease expiry to `leaseExpiresAt`, or to the attempt's deadline
   * (`JobRecord.attemptDeadline`, a time limit) where that is earlier. Resolves to the expiry the lease has
   * now, as stored (so a worker learns that its lease ends at the deadline), or `null` when the lease did not
   * hold, and then nothing changed.
   */
  extendLease(lease: LeaseRef, leaseExpiresAt: Date, now: Date): Promise<Date | null>;

  /** Fenced, one atomic write: records progress (0-100). Resolves to whether the lease held. */
  recordProgress(lease: LeaseRef, progress: number, now: Date): Promise<boolean>;

  /**
   * Fenced, one atomic write: replaces the held job's payload, and its
   * version with the one that payload is written in; the job stays active
   * under the same lease. Resolves to whether the lease held.
   */
  updatePayload(lease: LeaseRef, change: { payload: unknown; version: number }, now: Date): Promise<boolean>;

  /**
   * Fenced and atomic: completes the held job, recording in `movedTo` the job
   * it became, and inserts `next`, or does neither. When a retained job of
   * `next`'s type holds `next`'s idempotency key already, nothing is
   * inserted: the move completes into that job (`movedTo` is its id), which
   * is returned with `created: false` and left as it was, as an enqueue with
   * that key would return it. When that holder vanished before the store
   * could read it, nothing changed at all and it resolves to `KeyHolderGone`
   * (the engine tries again). Resolves to `null`, changing nothing, when the
   * lease did not hold.
   */
  moveJob(lease: LeaseRef, next: NewJob, now: Date): Promise<InsertOutcome | null>;

  /** `waiting` or `active` → `cancelled` (clearing any lease). `null` when the job is unknown or finished. */
  cancelJob(id: string, now: Date): Promise<JobRecord | null>;

  /** The job `id`, or `null` when there is none; `read` says what of it to leave unread. */
  getJob(id: string, read?: JobRead): Promise<JobRecord | null>;

  /** Jobs matching `filter`, ordered by id (descending with `newestFirst`). */
  listJobs(filter: ListFilter): Promise<JobRecord[]>;

  /**
   * The cheapest round trip that proves the store answers (SQL: `SELECT 1`,
   * MongoDB: the `ping` command), for health checks. Changes nothing; fails
   * with `UNAVAILABLE` like any operation when the database cannot be reached
   * or the store is closed.
   */
  ping(): Promise<void>;

  /** Releases connections. Idempotent. */
  close(): Promise<void>;
}
