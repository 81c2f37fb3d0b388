import type { Backoff, JobOrder } from '../contract/types.ts';
import { FINISHED_STATES, type JobError, type JobState, type TraceContext } from '../jobs.ts';
import type { LeaderElection } from '../roles/leadership.ts';

/**
 * The states a store keeps. `waiting` covers both `scheduled` and `ready`:
 * which one a job is in follows from `runAt` and the clock, so time passing
 * never needs a write.
 */
export const STORED_STATES = ['waiting', 'active', ...FINISHED_STATES] as const;

export type StoredState = (typeof STORED_STATES)[number];

/**
 * A job as every store keeps it. Dates are `Date`s; payload, result and error
 * are JSON values (payload and result as `toStoredValue` encodes them).
 */
export interface JobRecord {
  id: string;
  name: string;
  version: number;
  payload: unknown;
  state: StoredState;
  priority: number;
  order: JobOrder;
  runAt: Date;
  createdAt: Date;
  updatedAt: Date;
  /** Attempts started: incremented by each claim. */
  attempts: number;
  maxAttempts: number;
  backoff: Backoff;
  leaseMs: number;
  /**
   * The fencing token of the current lease, or, on a job its ack completed,
   * of the lease that completed it (so a repeated ack is recognised);
   * `null` otherwise.
   */
  leaseToken: string | null;
  leaseExpiresAt: Date | null;
  workerId: string | null;
  progress: number;
  result: unknown;
  error: JobError | null;
  idempotencyKey: string | null;
  /** Until when `idempotencyKey` holds (`idempotencyTtlMs`); `null`: while the job is retained. */
  idempotencyExpiresAt: Date | null;
  /**
   * The debounce key the job was enqueued with (`debounce.key`), while it holds it: a store takes it off the
   * job when a later debounce finds the job started or finished (see `debounceJobs`).
   */
  debounceKey: string | null;
  finishedAt: Date | null;
  movedTo: string | null;
  replayOf: string | null;
  /** The trace context the job was created in (see `EnqueueOptions.traceContext`), kept as given; `null`: none. */
  traceContext: TraceContext | null;
  /** The job's group (`EnqueueOptions.group`); `null`: none. */
  group: string | null;
}

/** What a claim returns of each job it leased, in claim order: what a worker is handed. */
export type ClaimedRecord = Pick<
  JobRecord,
  | 'id'
  | 'name'
  | 'version'
  | 'payload'
  | 'attempts'
  | 'maxAttempts'
  | 'leaseMs'
  | 'leaseToken'
  | 'leaseExpiresAt'
  | 'progress'
  | 'runAt'
  | 'traceContext'
>;

/** A job to insert. The engine resolves every option before it reaches a store. */
export interface NewJob {
  id: string;
  name: string;
  version: number;
  payload: unknown;
  priority: number;
  order: JobOrder;
  runAt: Date;
  createdAt: Date;
  maxAttempts: number;
  backoff: Backoff;
  leaseMs: number;
  idempotencyKey: string | null;
  /** With an `idempotencyKey`: the key holds until then (`createdAt` + `idempotencyTtlMs`); `null`: while retained. */
  idempotencyExpiresAt: Date | null;
  /** Set only on the jobs `debounceJobs` inserts; `null` on every other. */
  debounceKey: string | null;
  replayOf: string | null;
  /** Stored as given and returned by every read and claim of the job. */
  traceContext: TraceContext | null;
  /**
   * The group claims of a grouped type take turns between (`EnqueueOptions.group`); absent or `null`: none.
   * In a type whose jobs have groups, the engine gives a job without one the group `''`.
   */
  group?: string | null;
}

/** What an insert did with one job. */
export type InsertOutcome =
  | {
      job: JobRecord;
      /** `false` when an idempotency key matched a retained job, which is returned instead. */
      created: boolean;
    }
  | KeyHolderGone;

/**
 * The job's idempotency (or debounce) key was taken, but the job holding it was gone (pruned) by the time the
 * store read it, or had let go of it, so the key is free again: its `idempotencyExpiresAt` had passed at the
 * new job's `createdAt`, or, for a debounce key, it had started or finished; the store took the key off it.
 * Nothing was inserted for this job; the engine inserts it again (a bounded number of times, then fails with
 * a retryable `UNAVAILABLE`).
 */
export interface KeyHolderGone {
  job: null;
  created: false;
}

export interface ClaimRequest {
  name: string;
  /** Only jobs enqueued with a version in [minVersion, maxVersion] are claimed. */
  minVersion: number;
  maxVersion: number;
  limit: number;
  /** The fencing token of this claim; the pair (job id, token) names one lease. */
  leaseToken: string;
  workerId: string;
  /** Lease length; `null` uses each job's own `leaseMs`. */
  leaseMs: number | null;
  now: Date;
}

/** A fenced operation: it applies only while `leaseToken` holds an unexpired lease on job `id`. */
export interface LeaseRef {
  id: string;
  leaseToken: string;
}

export interface ListFilter {
  name?: string;
  /** Only jobs with these ids. */
  ids?: readonly string[];
  /** Stored states to include; all when omitted. */
  states?: readonly StoredState[];
  /** With `waiting`: `true` only `runAt <= now` (ready), `false` only `runAt > now` (scheduled). */
  due?: { now: Date; ready: boolean };
  /** Keyset paging: ids strictly greater than this one. */
  afterId?: string;
  limit: number;
}

export interface JobCount {
  name: string;
  version: number;
  state: JobState;
  count: number;
}

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
 * The registries a store keeps beside the jobs: the payload schemas
 * registered per job version, and the consumers seen (who reads what, from
 * which host). Separate from the job operations, which never touch them.
 */
export interface RegistryStore {
  /**
   * Registers the JSON Schema of one (job name, version) if none is
   * registered; resolves to the entry now stored, which is the earlier one
   * when it already existed (the caller compares fingerprints).
   */
  registerSchema(entry: SchemaEntry): Promise<SchemaEntry>;

  /** Registered schemas, optionally of one job name, ordered by name then version. */
  listSchemas(name?: string): Promise<SchemaEntry[]>;

  /** Upserts a consumer's presence (who reads what, from which host, last seen). */
  recordWorker(worker: WorkerPresence): Promise<void>;

  /** Consumers seen at or after `seenSince`. */
  listWorkers(seenSince: Date): Promise<WorkerPresence[]>;

  /**
   * Marks the consumers with these ids seen at `seenAt` (a lease extension
   * is a sign of life too), leaving a later `seenAt` as it is. Ids with no
   * presence recorded are skipped: nothing is inserted.
   */
  touchWorkers(ids: readonly string[], seenAt: Date): Promise<void>;
}

/**
 * The schedules kept in the store (`admin.upsertSchedule`), which every
 * server's leader enqueues beside its crontab, and the last occurrence each
 * schedule, stored or crontab, enqueued.
 */
export interface ScheduleStore {
  /** Inserts the schedule, or replaces the one with its `key`. One atomic write. */
  upsertSchedule(schedule: StoredSchedule): Promise<void>;

  /** Deletes the schedule with `key`; resolves to whether there was one. */
  removeSchedule(key: string): Promise<boolean>;

  /** Every stored schedule, ordered by key. */
  listSchedules(): Promise<StoredSchedule[]>;

  /**
   * Records `run` as the last occurrence of its schedule, unless one at the
   * same or a later `at` is recorded already (two servers may record one
   * occurrence, in either order).
   */
  recordScheduleRun(run: ScheduleRun): Promise<void>;

  /** The last runs recorded for these schedule keys (keys without one are left out). */
  listScheduleRuns(keys: readonly string[]): Promise<ScheduleRun[]>;
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
   * (guarantee 5), and `claimed` is null. Durable before it resolves. When a
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
   * Fenced, per job: gives leased jobs back as if they had not been claimed,
   * for a claim whose client went away before it was answered: `waiting`
   * again in their place in the queue, the lease ended and its attempt not
   * counted. Resolves to the ids that were released.
   */
  releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]>;

  /**
   * Fenced, one atomic write: records `error` and either returns the job to
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
   * The cheapest round trip that proves the store answers (SQL: `SELECT 1`,
   * MongoDB: the `ping` command), for health checks. Changes nothing; fails
   * with `UNAVAILABLE` like any operation when the database cannot be reached
   * or the store is closed.
   */
  ping(): Promise<void>;

  /** Jobs matching `filter`, ordered by id. */
  listJobs(filter: ListFilter): Promise<JobRecord[]>;

  /** Job counts by name, version and user-visible state (`scheduled`/`ready` split by `now`). */
  countJobs(now: Date): Promise<JobCount[]>;

  /** `dead` → `waiting` at `now` with attempts reset, for the given ids or all dead jobs of `name`. Resolves to how many. */
  retryDeadJobs(target: { name?: string; ids?: readonly string[] }, now: Date): Promise<number>;

  /**
   * `active` jobs whose lease expired before `now` lose it: back to `waiting`
   * in their place (run time and order key kept, so a crashed worker's job
   * does not go behind the jobs enqueued since), or `dead` when
   * `attempts >= maxAttempts`. The lost lease is
   * recorded as the error `error` (its `attempt` set from the job).
   */
  requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>): Promise<{ requeued: number; dead: number }>;

  /** Deletes up to `limit` finished jobs with `finishedAt < finishedBefore`. Resolves to how many. */
  pruneJobs(finishedBefore: Date, limit: number): Promise<number>;

  /** Releases connections. Idempotent. */
  close(): Promise<void>;
}

/** One registered payload schema. */
export interface SchemaEntry {
  name: string;
  version: number;
  /** A stable hash of the canonical JSON Schema. */
  fingerprint: string;
  jsonSchema: unknown;
  registeredAt: Date;
}

/** A consumer, as last reported by its server. */
export interface WorkerPresence {
  /** Unique per consumer (worker) instance. */
  id: string;
  host: string;
  name: string;
  minVersion: number;
  maxVersion: number;
  /** The worker's process id, when it reported one (SDKs running in a browser have none). */
  pid: number | null;
  /** When the worker started, by its own clock, when it reported it. */
  startedAt: Date | null;
  seenAt: Date;
}

/** A schedule kept in the store: a crontab entry added at run time, named by its `key`. */
export interface StoredSchedule {
  key: string;
  /** The cron expression, checked before it is stored (see `CronEntry.cron`). */
  cron: string;
  /** The IANA time zone the expression is read in. */
  timezone: string;
  name: string;
  /** `null`: the newest version registered when each occurrence is enqueued. */
  version: number | null;
  /** The payload of every occurrence, as `toStoredValue` encodes it. */
  payload: unknown;
  /** Enqueue options of every occurrence (see `CronEntry.options`), a JSON object, or `null`. */
  options: Record<string, unknown> | null;
  updatedAt: Date;
}

/** The last occurrence a schedule enqueued. */
export interface ScheduleRun {
  /** The schedule's occurrence-key prefix: `cron:<key>` for a crontab entry, `schedule:<key>` for a stored one. */
  key: string;
  /** The job the occurrence enqueued (or found, by its idempotency key). */
  jobId: string;
  /** The occurrence's time. */
  at: Date;
}

/**
 * The group of a job enqueued without one into a grouped type (`NewJob.group`): those jobs take their turns
 * as one group, which `groupConcurrency` does not limit. (An enqueue's group is never empty.)
 */
export const NO_GROUP = '';

/** The limits of one job type; `null`: no such limit. */
export interface QueueLimits {
  /** Active (leased) jobs of the type across all workers and servers. */
  concurrency: number | null;
  /** At most `max` jobs of the type start in any window of `perMs`. */
  rateLimit: { max: number; perMs: number } | null;
  /** Active jobs per group (the enqueue option `group`); jobs without a group are not limited by it. */
  groupConcurrency: number | null;
}

/** The flow-control settings a store keeps for one job type (`admin.pause`, `admin.setLimits`). */
export interface QueueSettings extends QueueLimits {
  name: string;
  /** Claims lease nothing of a paused type; its jobs keep arriving. */
  paused: boolean;
  /** Jobs of the type were enqueued with a group: claims take turns between groups. */
  grouped: boolean;
  updatedAt: Date;
}

/** A change to a type's settings: fields left out stay as they are; a limit set to `null` is cleared. */
export type QueueSettingsChange = Partial<QueueLimits> & { paused?: boolean; grouped?: true };

/** What a claim under a type's settings (`claimLimitedJobs`) did. */
export interface LimitedClaim {
  /** The jobs leased, in claim order. */
  jobs: ClaimedRecord[];
  /** The type is paused: nothing was leased. */
  paused: boolean;
  /**
   * Set when the rate limit stopped this claim short of its `limit` (or will stop the next claim): the
   * earliest time a job of the type may start again. `null` when the rate limit is not what holds.
   */
  nextStartAt: Date | null;
}

/**
 * Flow control: the per-type settings every server reads, and the claim
 * that honours them. A type with no settings stored is claimed by
 * `claimJobs`, which never reads them.
 */
export interface FlowControlStore {
  /** The settings stored, of one type or of all, ordered by name. */
  listQueueSettings(name?: string): Promise<QueueSettings[]>;

  /**
   * Applies `change` to the type's settings, creating them (not paused, no
   * limits) when none are stored; one atomic write. Resolves to the settings
   * now stored.
   */
  updateQueueSettings(name: string, change: QueueSettingsChange, now: Date): Promise<QueueSettings>;

  /**
   * `claimJobs` under the type's stored settings, atomically with respect to
   * every other `claimLimitedJobs` of the type (they are serialised on the
   * type's settings): nothing when paused; no more than `concurrency` jobs of
   * the type active once it is done (counting every `active` job, expired
   * lease or not), nor more than `groupConcurrency` of one group; no more than
   * `rateLimit.max` started in any window of `rateLimit.perMs` (a start is
   * the claim's `now`); and, for a grouped type, groups take turns: the group
   * whose last start is oldest (or that never started) goes first, and a
   * batch takes one job per group per round. Within a group, jobs keep the
   * order of guarantee 5. With no settings stored it is `claimJobs`.
   */
  claimLimitedJobs(request: ClaimRequest): Promise<LimitedClaim>;
}
