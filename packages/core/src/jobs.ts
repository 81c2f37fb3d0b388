import type { Backoff, JobOrder, JobRetention } from './contract/types.ts';

/** The states a job ends in: it is never delivered again, and its history is pruned after the retention. */
export const FINISHED_STATES = ['completed', 'dead', 'cancelled'] as const;

/** A state a job ends in. */
export type FinishedState = (typeof FINISHED_STATES)[number];

/** Whether `state` is one a job ends in. */
export function isFinishedState(state: string): state is FinishedState {
  return (FINISHED_STATES as readonly string[]).includes(state);
}

/** A job's state as users see it. */
export const JOB_STATES = ['scheduled', 'ready', 'waiting-children', 'active', ...FINISHED_STATES] as const;

/**
 * - `scheduled`: `runAt` is in the future (delayed, or waiting out a retry backoff)
 * - `ready`: may be claimed now
 * - `waiting-children`: a parent whose children have not all ended; it holds no lease and claims never see it
 * - `active`: held by an unexpired lease
 * - `completed`, `dead` (attempts used up, or a permanent failure), `cancelled`: finished; never delivered again
 */
export type JobState = (typeof JOB_STATES)[number];

/** The error of one failed attempt of a job, as recorded by the engine. */
export interface JobError {
  message: string;
  /** The class of what the handler threw (`TypeError`, `PermanentError`, …); absent when it threw no `Error`. */
  name?: string;
  /**
   * The handler's stack, as its worker sent it (runtime frames left out, at most
   * `ERROR_HISTORY_LIMITS.stackChars`): the user's own code, never the server's.
   */
  stack?: string;
  /** Set when a handler threw a permanent error, which skips the remaining attempts. */
  permanent?: boolean;
  /**
   * Set when the attempt ended for a reason of its own rather than what a handler threw: `LEASE_EXPIRED` (its
   * worker stopped extending the lease), `TIMEOUT` (it ran past its time limit, `timeoutMs`).
   */
  code?: string;
  attempt: number;
  at: Date;
}

/**
 * What a job keeps of its failed attempts: the errors of the latest `attempts`, each with a class name of at
 * most `nameChars` and a stack of at most `stackChars` characters (its message: at most 4,000).
 */
export const ERROR_HISTORY_LIMITS = Object.freeze({ attempts: 25, stackChars: 4_096, nameChars: 200 } as const);

/** What `handle.status()` shows of a job. */
export interface JobStatus<Result = unknown> {
  id: string;
  name: string;
  /** The version the job was enqueued with. */
  version: number;
  state: JobState;
  priority: number;
  /** Attempts started so far. */
  attempts: number;
  maxAttempts: number;
  progress: number;
  result?: Result;
  /** The last failed attempt's error. */
  error?: JobError;
  /**
   * Every failed attempt's error, oldest first: the latest `ERROR_HISTORY_LIMITS.attempts` of them, the last
   * being `error`. On one job's status (`handle.status()`, `admin.job`); listings leave it out.
   */
  errors?: JobError[];
  idempotencyKey?: string;
  /** Until when `idempotencyKey` holds, for a job enqueued with `idempotencyTtlMs`. */
  idempotencyExpiresAt?: Date;
  /**
   * `'finished'` for a job enqueued with `idempotencyUntil: 'finished'`, whose key frees when it completes, dies
   * or is cancelled (a finished one shows no `idempotencyKey`: the key is free).
   */
  idempotencyUntil?: 'finished';
  /** The `debounce.key` the job was enqueued with, while later enqueues with it may still replace it. */
  debounceKey?: string;
  createdAt: Date;
  updatedAt: Date;
  runAt: Date;
  finishedAt?: Date;
  leaseExpiresAt?: Date;
  /** For a job ended by `moveTo`: the id of the job it became. */
  movedTo?: string;
  /** For a replayed job: the id of the job it replays. */
  replayOf?: string;
  /** The job whose `moveTo` made this one. */
  movedFrom?: string;
  /** The group the job was enqueued in (`EnqueueOptions.group`). */
  group?: string;
  /** The job's own retention (`EnqueueOptions.retention`), when it has one: the ends it names. */
  retention?: JobRetention;
  /** For a child in a flow: its parent's id. */
  parentId?: string;
  /** For a child in a flow: what its dead or cancelled end does to its parent. */
  onFailure?: ChildFailurePolicy;
  /**
   * For a parent, on one job's status (`handle.status()`, `admin.job`): its children in enqueue order, at most
   * `FLOW_LIMITS.statusChildren` of them (`childCount` says how many it has); listings leave it out.
   */
  children?: ChildSummary[];
  /** For a parent: how many children it has had, from its enqueue and every `waitForChildren`. */
  childCount?: number;
  /** For a parent in `waiting-children`: how many of its children have not ended. */
  pendingChildren?: number;
}

/**
 * What a child's dead or cancelled end does to its parent:
 * - `fail-parent`: the parent goes dead at once, with an error naming the child (code `CHILD_FAILED`), and its
 *   other unfinished children are cancelled
 * - `ignore`: the child counts as ended; the parent runs without its result
 * - `continue`: the child counts as ended; the parent runs and sees its error among its children
 */
export const CHILD_FAILURE_POLICIES = ['fail-parent', 'ignore', 'continue'] as const;

export type ChildFailurePolicy = (typeof CHILD_FAILURE_POLICIES)[number];

/** A child as its parent's status lists it. */
export interface ChildSummary {
  id: string;
  name: string;
  state: JobState;
}

/**
 * The bounds of flows: the most children (at every depth) one flow enqueue or one `waitForChildren` makes,
 * the deepest nesting below its parent, and how many children one job's status lists.
 */
export const FLOW_LIMITS = Object.freeze({ children: 10_000, depth: 32, statusChildren: 1_000 } as const);

/**
 * The most items one call takes: jobs enqueued, claimed, completed, released
 * or listed at once. A server may set a lower limit (`limits.maxBatchSize`);
 * this is its default, and what a client splits larger batches by.
 */
export const MAX_BATCH_SIZE = 1000;

/**
 * The lease lengths every entry accepts (`leaseMs` of enqueue options, job
 * defaults, claims and extensions), in milliseconds: 100 ms to 24 h.
 *
 * The maximum bounds how long a crashed worker can keep a job from running:
 * a lease is the promise that the job is delivered again once it lapses, and
 * a lease of years (the store would keep one to the year 287453) is a job
 * taken off the queue. Work that runs longer extends its lease while it runs
 * (the consumer SDK does so on its own). A day is as far as peers go: BullMQ
 * renews a 30 s `lockDuration`, pg-boss caps `expireInSeconds` at 24 h.
 * The minimum is below any useful lease and above a round trip: a shorter
 * lease lapses before the worker holds the job, which another claim then
 * takes while the first still runs it.
 */
export const LEASE_MS_LIMITS = Object.freeze({ min: 100, max: 86_400_000 } as const);

/**
 * The bounds of a handler's time limit (`timeoutMs`), in milliseconds: 100 ms
 * to 24 h, as pg-boss bounds `expireInSeconds`. Below that no handler gets
 * to start; work that runs longer than a day belongs in smaller jobs.
 */
export const TIMEOUT_MS_LIMITS = Object.freeze({ min: 100, max: 86_400_000 } as const);

/**
 * The bounds of a job's own retention (`retention.completedMs`, `retention.deadMs`), in milliseconds: 0 (pruned
 * at the pruner's next run after the job ends) to 3,650 days.
 */
export const RETENTION_MS_LIMITS = Object.freeze({ min: 0, max: 3650 * 86_400_000 } as const);

/**
 * The longest lease token a store hands out, and a server takes back: the
 * engine's own (its claim time and a UUID, at most 48 characters) with what
 * a store adds to it. The MongoDB store appends `@` and the job's type (at
 * most 100 characters), so that each write a lease fences names the shard key.
 */
export const LEASE_TOKEN_MAX_CHARS = 160;

/** Per-enqueue options; anything omitted comes from the job type's defaults, then the engine's. */
export interface EnqueueOptions {
  /**
   * The job's id, chosen by the caller: a UUID (36 characters, any version; stored in lower case). Enqueueing
   * the same job again under its id (same type, version and payload) returns that job, `created: false`, while
   * it is retained; an id a different job holds is `CONFLICT`. Not with `debounce`. The SDK makes a UUIDv7 for
   * every job given none, so that sending an enqueue again cannot make a second job.
   * @defaultValue a new UUIDv7
   */
  id?: string | undefined;
  /** Higher runs first. Integer in [-1_000_000, 1_000_000]. @defaultValue 0 */
  priority?: number | undefined;
  /** Do not deliver before this many milliseconds from now. Ignored when `runAt` is given. */
  delayMs?: number | undefined;
  /** Do not deliver before this time. */
  runAt?: Date | undefined;
  /**
   * A retained job of this type with the same key is returned instead of a new one. 1-255 characters.
   * Not with `debounce`.
   */
  idempotencyKey?: string | undefined;
  /**
   * With `idempotencyKey`: the key holds only this long after the job that took it was enqueued
   * (throttling). Later, an enqueue with the key makes a new job, which takes the key over, even while the
   * earlier job is retained. 1 ms to 365 days.
   * @defaultValue none: the key holds while its job is retained
   */
  idempotencyTtlMs?: number | undefined;
  /**
   * With `idempotencyKey`: how long the key holds. `'pruned'`: while its job is retained, finished or not.
   * `'finished'`: while its job waits, is scheduled, waits for its children or runs (retries included); once
   * it completes, dies or is cancelled, the next enqueue with the key makes a new job (deduplication of
   * unfinished work, as BullMQ's deduplication without a TTL or pg-boss's singleton keys). With
   * `idempotencyTtlMs` too, the key frees at whichever comes first.
   * @defaultValue 'pruned'
   */
  idempotencyUntil?: IdempotencyUntil | undefined;
  /**
   * Debouncing: while a job of this type enqueued with `debounce.key` is still waiting (not started), this
   * enqueue changes it as `debounce.mode` says, and the handle is that job; otherwise a new job is made, to
   * run `delayMs` from now. Concurrent enqueues leave one waiting job. Key: 1-255 characters; `delayMs`: 0 to
   * 365 days. Not with `idempotencyKey`, `idempotencyTtlMs`, `idempotencyUntil`, `delayMs` or `runAt`.
   */
  debounce?: DebounceOptions | undefined;
  /**
   * The job's group: among ready jobs of its type, groups take turns (round-robin), so one group's backlog
   * does not hold back another's, and at most the type's `groupConcurrency` jobs of one group run at once.
   * Priority and order still apply within a group. 1-255 characters. @defaultValue none
   */
  group?: string | undefined;
  /** Attempts before the job goes dead, 1-1000. @defaultValue 5 */
  maxAttempts?: number | undefined;
  /** @defaultValue `{ type: 'exponential', delayMs: 1000 }` */
  backoff?: Backoff | undefined;
  /** Lease length in milliseconds, 100 ms to 24 h (`LEASE_MS_LIMITS`). @defaultValue 30_000 */
  leaseMs?: number | undefined;
  /**
   * How long each attempt's handler may run, from its claim, in milliseconds, 100 ms to 24 h
   * (`TIMEOUT_MS_LIMITS`). The store enforces it: no lease outlives the attempt's deadline (claim time +
   * `timeoutMs`), so a worker that runs on loses the job there, the attempt fails with `TIMEOUT` and is
   * retried like any failure, and the late ack is refused with `LEASE_LOST`. The SDK sends the type's
   * `defineJob({ timeoutMs })` when none is given. @defaultValue no limit
   */
  timeoutMs?: number | undefined;
  /** @defaultValue 'fifo' */
  order?: JobOrder | undefined;
  /**
   * The trace context the job was created in, as a propagation carrier (W3C: `traceparent`, and `tracestate`
   * when there is one): stored with the job, so the span that processes it links to, or continues, the
   * producer's trace. The SDK sets it from the active span when OpenTelemetry is installed (docs/observability.md);
   * a plain HTTP producer may set it itself. At most 8 entries, keys of 1-64 and values of 1-1024 characters.
   * @defaultValue none
   */
  traceContext?: TraceContext | undefined;
  /**
   * How long the job is kept once it completed or went dead, beside the server-wide `historyRetentionMs`
   * (see `JobRetention`). Given here, it replaces the job type's `defaults.retention` as a whole.
   * @defaultValue the job type's `defaults.retention`, else the server's `historyRetentionMs`
   */
  retention?: JobRetention | undefined;
}

/** A trace propagation carrier: header names (`traceparent`, `tracestate`) to their values. */
export type TraceContext = Readonly<Record<string, string>>;

/** The enqueue option `debounce`. */
export interface DebounceOptions {
  /** Enqueues of one job type with the same key share one waiting job. 1-255 characters. */
  key: string;
  /** How long after the latest of them the job runs (the first of them, in mode `preserveRunAt`), 0 to 365 days. */
  delayMs: number;
  /**
   * What an enqueue does to the waiting job: `'replace'` gives it this enqueue's payload and options and moves
   * its run time to now + `delayMs`; `'preserveRunAt'` gives it the payload and options but keeps its run time;
   * `'keepFirst'` leaves it as it is and drops this enqueue (the handle is the waiting job).
   * @defaultValue 'replace'
   */
  mode?: DebounceMode | undefined;
}

/** The values of `EnqueueOptions.idempotencyUntil`. */
export const IDEMPOTENCY_UNTIL = ['pruned', 'finished'] as const;
export type IdempotencyUntil = (typeof IDEMPOTENCY_UNTIL)[number];

/** The values of `DebounceOptions.mode`. */
export const DEBOUNCE_MODES = ['replace', 'preserveRunAt', 'keepFirst'] as const;
export type DebounceMode = (typeof DEBOUNCE_MODES)[number];
