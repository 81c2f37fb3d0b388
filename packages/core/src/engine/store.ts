import type { JobError } from '../jobs.ts';
import type { LeaderElection } from '../roles/leadership.ts';
import type { FlowControlStore, LimitedClaim } from './flow-control-store.ts';
import type { RegistryStore } from './registry-store.ts';
import type { ScheduleStore } from './schedule-store.ts';
import type {
  ClaimedRecord,
  ClaimRequest,
  InsertOutcome,
  JobCount,
  JobRecord,
  LeaseRef,
  ListFilter,
  NewJob,
  SweptLease,
} from './store-records.ts';

export type {
  FlowControlStore,
  LimitedClaim,
  QueueLimits,
  QueueSettings,
  QueueSettingsChange,
} from './flow-control-store.ts';
export { NO_GROUP } from './flow-control-store.ts';
export type { RegistryStore, SchemaEntry, WorkerPresence, WorkerRoom } from './registry-store.ts';
export { WORKER_REGISTRY_BOUNDS } from './registry-store.ts';
export type { ScheduleRun, ScheduleStore, StoredSchedule } from './schedule-store.ts';
export type {
  ClaimedRecord,
  ClaimRequest,
  InsertOutcome,
  JobCount,
  JobRecord,
  KeyHolderGone,
  LeaseRef,
  ListFilter,
  NewJob,
  StoredState,
  SweptLease,
} from './store-records.ts';
export { STORED_STATES } from './store-records.ts';

/**
 * What a job count covers: every state, or only the live ones (`scheduled`, `ready`, `active`), which a store
 * can count without reading finished history. Frequent counts (metrics) take `'live'`.
 */
export type CountScope = 'all' | 'live';

/** What a store can do beyond the required operations; the engine and server fall back explicitly. */
export interface StoreCapabilities {
  /** Cross-process wake-ups (PostgreSQL LISTEN/NOTIFY, MongoDB change streams, a polled table on MySQL). */
  notify: boolean;
  /**
   * Leader election (`Store.leadership`): with it, one server at a time runs
   * the maintenance roles; without it, every server runs them.
   */
  leadership: boolean;
  /**
   * Insert-and-claim (`Store.insertAndClaimJob`): a job enqueued for a
   * consumer already waiting is leased to it by its own insert; without it,
   * the job is inserted and the waiting claim is woken to claim it.
   */
  insertAndClaim: boolean;
  /**
   * Complete-and-claim (`Store.completeAndClaimLimitedJobs`): a limited claim that carries acks commits them
   * and its lease together, so the places under `concurrency` they free are its to take at the cost of one
   * commit; without it, the acks commit first and the claim runs after.
   */
  completeAndClaim: boolean;
}

/** Cross-process wake-up channel, when a store has `capabilities.notify`. */
export interface StoreNotifier {
  /**
   * Sends a short text message (under 7,000 characters) to every listener on this store. The queue server
   * sends job names, to say jobs became ready, lists of finished job ids, and word that it has result
   * requests waiting.
   */
  publish(message: string): Promise<void>;
  /**
   * Calls `listener` with each message as processes publish them, and with `'*'` after a reconnect, when
   * messages may have been missed; resolves to an unsubscribe function.
   */
  subscribe(listener: (name: string) => void): Promise<() => Promise<void>>;
}

/** A notifier a store owns: closed with the store, before its connections end. */
export interface ClosableNotifier extends StoreNotifier {
  close(): Promise<void>;
}

/**
 * The storage contract. Each operation is one atomic semantic step; stores
 * never read the clock (every time comes in as `now`) and never decide
 * policy (retries, backoff, retention are the engine's).
 */
export interface Store extends RegistryStore, ScheduleStore, FlowControlStore {
  /** A short name for logs and test titles, e.g. `postgres`. */
  readonly kind: string;
  readonly capabilities: StoreCapabilities;
  readonly notifier?: StoreNotifier;
  /** Leader election among the servers on this store, when it has `capabilities.leadership`. */
  readonly leadership?: LeaderElection;

  /**
   * Inserts jobs in one round trip where the store allows. No two jobs of one
   * call share a `(name, idempotencyKey)`: the engine resolves repeats within
   * a batch before it calls. A job whose `(name, idempotencyKey)` matches a
   * retained job is not inserted; that job is returned with `created: false`,
   * or, when it vanished before the store could read it, `KeyHolderGone`.
   * A holder whose `idempotencyExpiresAt` is at or before the job's
   * `createdAt` has let go of the key: the store clears the key on it (only
   * while that still holds) and answers `KeyHolderGone`. Each job is inserted
   * or not on its own; the ones inserted are durable before it resolves.
   * Outcomes are in input order. Jobs with a `debounceKey` go to `debounceJobs`.
   */
  insertJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]>;

  /**
   * Inserts jobs that carry a `debounceKey` (no two of one call share a
   * `(name, debounceKey)`: the engine merges repeats first). Each job, in one
   * atomic step of its own: when a job of its name holds that debounce key
   * and has not started (waiting, no attempts), that job takes this one's payload, version, priority,
   * attempts limit, backoff, lease length and run time (keeping its id,
   * creation time, order and attempts) and is returned, updated, with
   * `created: false`; when no job holds the key, this one is inserted with
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
   * With `capabilities.insertAndClaim`, for a consumer already waiting:
   * inserts `job` and, in the same atomic step, leases it under `claim` as
   * `claimJobs` would, when `claim` could take it (its version is in range
   * and it is due at `claim.now`) and no job `claim` could take is ready
   * already. Otherwise `job` is inserted waiting, behind the ready ones
   * (jobs ready first are claimed first), and `claimed` is null. Durable before it resolves. When a
   * retained job of its type holds `job`'s idempotency key already, nothing
   * is inserted and it resolves to `null` (`insertJobs` then finds that job).
   */
  insertAndClaimJob?(
    job: NewJob,
    claim: ClaimRequest,
  ): Promise<{ job: JobRecord; claimed: ClaimedRecord | null } | null>;

  /**
   * Fenced, per job: `active` → `completed` with `result`, ending the lease
   * but keeping its token on the record. Each job is completed or not on its
   * own. Resolves to the ids that were completed: those their token held.
   */
  completeJobs(jobs: readonly (LeaseRef & { result: unknown })[], now: Date): Promise<string[]>;

  /**
   * With `capabilities.completeAndClaim`: `completeJobs(jobs, claim.now)`, then `claimLimitedJobs(claim)`, in
   * one transaction. The claim counts the type's active jobs after the completions, so the places they free
   * are its to take, and no other limited claim of the type sees them freed before this one has run. Both
   * commit together or not at all. Resolves to the ids completed (as `completeJobs`) and the claim.
   */
  completeAndClaimLimitedJobs?(
    jobs: readonly (LeaseRef & { result: unknown })[],
    claim: ClaimRequest,
  ): Promise<{ completed: string[]; claim: LimitedClaim }>;

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

  /** Fenced, one atomic write: moves the lease expiry to `leaseExpiresAt`. Resolves to whether the lease held. */
  extendLease(lease: LeaseRef, leaseExpiresAt: Date, now: Date): Promise<boolean>;

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

  getJob(id: string): Promise<JobRecord | null>;

  /**
   * Makes a scheduled job (not started, due after `now`: delayed, or waiting out a retry's backoff) due at
   * `now`, in the claim order of a job enqueued to run then; its attempts and everything else stay. Atomic:
   * a job claimed, cancelled or due meanwhile is left as it is. Resolves to the job as it now is, or `null`
   * when it was not scheduled (or is gone).
   */
  promoteJob(id: string, now: Date): Promise<JobRecord | null>;

  /**
   * The cheapest round trip that proves the store answers (SQL: `SELECT 1`,
   * MongoDB: the `ping` command), for health checks. Changes nothing; fails
   * with `UNAVAILABLE` like any operation when the database cannot be reached
   * or the store is closed.
   */
  ping(): Promise<void>;

  /** Jobs matching `filter`, ordered by id (descending with `newestFirst`). */
  listJobs(filter: ListFilter): Promise<JobRecord[]>;

  /**
   * Job counts by name, version and user-visible state (`scheduled`/`ready` split by `now`). With scope
   * `'live'` only jobs not finished need counting: a store whose count of finished jobs reads their history
   * leaves those rows out, and the engine drops any a store returns (see `Engine.counts`). @defaultValue 'all'
   */
  countJobs(now: Date, scope?: CountScope): Promise<JobCount[]>;

  /** `dead` → `waiting` at `now` with attempts reset, for the given ids or all dead jobs of `name`. Resolves to how many. */
  retryDeadJobs(target: { name?: string; ids?: readonly string[] }, now: Date): Promise<number>;

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

  /** Releases connections. Idempotent. */
  close(): Promise<void>;
}
