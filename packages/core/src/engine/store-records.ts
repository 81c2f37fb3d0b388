import type { Backoff, JobOrder } from '../contract/types.ts';
import {
  type ChildFailurePolicy,
  type DebounceMode,
  FINISHED_STATES,
  type JobError,
  type JobState,
  type TraceContext,
} from '../jobs.ts';

/**
 * The states a store keeps. `waiting` covers both `scheduled` and `ready`:
 * which one a job is in follows from `runAt` and the clock, so time passing
 * never needs a write. `waiting-children`: a parent whose children have not
 * all ended (`pendingChildren > 0`), kept where no claim reads (see `FlowStore`).
 */
export const STORED_STATES = ['waiting', 'waiting-children', 'active', ...FINISHED_STATES] as const;

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
  /** Each attempt's time limit (`EnqueueOptions.timeoutMs`). Absent or `null`: none. */
  timeoutMs?: number | null;
  /**
   * While `active` under a time limit: when the attempt must end (its claim time + `timeoutMs`). No lease of
   * the attempt expires later: the claim and every extension stop at it. Absent or `null`: no deadline.
   */
  attemptDeadline?: Date | null;
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
  /** The last failed attempt's error. */
  error: JobError | null;
  /** Every failed attempt's error, oldest first: the latest `ERROR_HISTORY_LIMITS.attempts`, ending with `error`. */
  errors: JobError[];
  idempotencyKey: string | null;
  /** Until when `idempotencyKey` holds (`idempotencyTtlMs`); `null`: while the job is retained. */
  idempotencyExpiresAt: Date | null;
  /**
   * `true`: `idempotencyKey` frees when the job completes, dies or is cancelled (`idempotencyUntil: 'finished'`;
   * see `JobStore.insertJobs`). Absent or `false`: it holds while the job is retained.
   */
  idempotencyUntilFinished?: boolean;
  /**
   * The debounce key the job was enqueued with (`debounce.key`), while it holds it: a store takes it off the
   * job when a later debounce finds the job started or finished (see `debounceJobs`).
   */
  debounceKey: string | null;
  finishedAt: Date | null;
  movedTo: string | null;
  replayOf: string | null;
  /** The job whose `moveTo` made this one (the other end of its `movedTo`); `null` for every other job. */
  movedFrom: string | null;
  /** The trace context the job was created in (see `EnqueueOptions.traceContext`), kept as given; `null`: none. */
  traceContext: TraceContext | null;
  /** The job's group (`EnqueueOptions.group`); `null`: none. */
  group: string | null;
  /** How long the job is kept after it completed (`EnqueueOptions.retention`). Absent or `null`: the server-wide retention. */
  retainCompletedMs?: number | null;
  /** How long the job is kept after it went dead (`EnqueueOptions.retention`). Absent or `null`: the server-wide retention. */
  retainDeadMs?: number | null;
  /** For a child in a flow: its parent's id. Absent or `null`: not a child. */
  parentId?: string | null;
  /** For a child in a flow: what its dead or cancelled end does to its parent. Absent or `null`: not a child. */
  onFailure?: ChildFailurePolicy | null;
  /** How many children the job has had (its flow enqueue's and every `waitForChildren`'s). Absent: 0. */
  childCount?: number;
  /**
   * How many of its children have not ended: above 0 exactly while the job is `waiting-children`. Absent: 0.
   * A parent that went dead or cancelled while children were pending keeps the count it had.
   */
  pendingChildren?: number;
}

/**
 * What a claim returns of each job it leased, in claim order: what a worker is handed. `childCount` is read for
 * a resumed parent and `parentId` for a child (the events of its attempt name its parent); both are columns of
 * the row the claim leases, so a job outside flows costs no read for them.
 */
export type ClaimedRecord = Pick<
  JobRecord,
  | 'id'
  | 'name'
  | 'version'
  | 'payload'
  | 'attempts'
  | 'maxAttempts'
  | 'leaseMs'
  | 'timeoutMs'
  | 'leaseToken'
  | 'leaseExpiresAt'
  | 'progress'
  | 'runAt'
  | 'traceContext'
  | 'childCount'
  | 'parentId'
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
  /** Each attempt's time limit; set only on the jobs that have one (absent: none). */
  timeoutMs?: number | null;
  idempotencyKey: string | null;
  /** With an `idempotencyKey`: the key holds until then (`createdAt` + `idempotencyTtlMs`); `null`: while retained. */
  idempotencyExpiresAt: Date | null;
  /** With an `idempotencyKey`: `true` when the key frees as the job finishes (see `JobRecord`). Absent: `false`. */
  idempotencyUntilFinished?: boolean;
  /** Set only on the jobs `debounceJobs` inserts; `null` on every other. */
  debounceKey: string | null;
  /**
   * With a `debounceKey`: what the debounce does to a holder that has not started (see `JobStore.debounceJobs`).
   * Absent: `'replace'`. Not stored.
   */
  debounceMode?: DebounceMode;
  replayOf: string | null;
  /** The job whose `moveTo` made this one (the other end of its `movedTo`); `null` for every other job. */
  movedFrom?: string | null;
  /** Stored as given and returned by every read and claim of the job. */
  traceContext: TraceContext | null;
  /**
   * The group claims of a grouped type take turns between (`EnqueueOptions.group`); absent or `null`: none.
   * In a type whose jobs have groups, the engine gives a job without one the group `''`.
   */
  group?: string | null;
  /**
   * How long the job is kept after it completed, in place of the server-wide retention (see
   * `UpkeepStore.pruneJobs`). Absent or `null`: the server-wide retention.
   */
  retainCompletedMs?: number | null;
  /** How long the job is kept after it went dead, as `retainCompletedMs`. Absent or `null`: the server-wide retention. */
  retainDeadMs?: number | null;
  /**
   * For a child in a flow (`FlowStore.insertFlow`, `FlowStore.waitForChildren`): its parent's id. Absent or
   * `null` on every other job.
   */
  parentId?: string | null;
  /** For a child in a flow: what its dead or cancelled end does to its parent (the engine sets it on every child). */
  onFailure?: ChildFailurePolicy | null;
  /**
   * For a parent inserted with its children (`FlowStore.insertFlow`): how many direct children it has. Above 0,
   * the job is inserted `waiting-children`, with `childCount` and `pendingChildren` both this. Absent: 0.
   */
  pendingChildren?: number;
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
 * new job's `createdAt`, or it held its key until finished and had finished, or, for a debounce key, it had
 * started or finished; the store took the key off it.
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
  /**
   * The fencing token of this claim. A store may lease the jobs under a token
   * of its own made from it (the MongoDB store adds the job type); the claimed
   * jobs carry the token they are held under, and the pair (job id, that
   * token) names one lease.
   */
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

/** A job whose expired lease a sweep ended (`Store.requeueExpiredLeases`). */
export interface SweptLease {
  id: string;
  name: string;
  version: number;
  /** The attempt that lost its lease. */
  attempt: number;
  /** No attempt remained: the job is now `dead`; otherwise `waiting` again. */
  dead: boolean;
  /** For a child in a flow: its parent's id, read with the row the sweep changes. Absent: not a child. */
  parentId?: string;
  /** The lease ran out at the attempt's deadline (`timeoutMs`): its error is `TIMEOUT`. Absent: `LEASE_EXPIRED`. */
  timedOut?: boolean;
}

/**
 * What a read brings of each job; each option leaves unread what the one before it does, and more.
 * - `withoutPayload`: the payload is left unread (`payload` `null`): for reads that show a job's state
 *   (statuses, lists, events), which never carry its payload, so that a job with a large payload costs them no
 *   more than any other.
 * - `withoutResult`: the result and the error history too (`result` `null`; `errors` holds the latest error
 *   alone), the latest `error` still read: for lists of rows, which show a job's last error but neither its
 *   result nor its history.
 * - `withoutValues`: the latest error too (`error` `null`): for reads that need only what a job is and where it
 *   stands (its type for a scope check, its state, its lease), which then cost the same for every job.
 */
export interface JobRead {
  withoutPayload?: boolean;
  withoutResult?: boolean;
  withoutValues?: boolean;
}

export interface ListFilter extends JobRead {
  name?: string;
  /** Only jobs with these ids. */
  ids?: readonly string[];
  /** Stored states to include; all when omitted. */
  states?: readonly StoredState[];
  /** With `waiting`: `true` only `runAt <= now` (ready), `false` only `runAt > now` (scheduled). */
  due?: { now: Date; ready: boolean };
  /** Only jobs enqueued with this version. */
  version?: number;
  /** Only jobs of this group (`EnqueueOptions.group`). */
  group?: string;
  /** Only jobs holding this idempotency key (with `name`, read through the idempotency index). */
  idempotencyKey?: string;
  /** Only the job holding this debounce key (with `name`, read through the debounce index). */
  debounceKey?: string;
  /** Keyset paging: ids strictly greater than this one. */
  afterId?: string;
  /** Keyset paging: ids strictly less than this one. */
  beforeId?: string;
  /** Ordered by id descending (newest first) instead of ascending; the same indexes serve both. */
  newestFirst?: boolean;
  limit: number;
}

export interface JobCount {
  name: string;
  version: number;
  state: JobState;
  count: number;
}
