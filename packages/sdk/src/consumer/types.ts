import type {
  Catalog,
  EnqueueOptions,
  JobName,
  PayloadInput,
  PayloadOutput,
  ResultInput,
  ResultOutput,
} from '@workq/core';
import type { ChildJob, FlowChild } from '../flows.ts';
import type { Logger } from '../logger.ts';

/**
 * The options of `ctx.moveTo`: those of an enqueue, but the next job is made as this one ends, so no debounce,
 * key TTL, `idempotencyUntil` or id of the caller's.
 */
export type MoveToOptions = Omit<EnqueueOptions, 'debounce' | 'idempotencyTtlMs' | 'idempotencyUntil' | 'id'>;

/** A job as a handler receives it: the payload parsed and upgraded to the current version. */
export interface ConsumedJob<Payload> {
  id: string;
  name: string;
  payload: Payload;
  /** 1-based number of this attempt. */
  attempt: number;
  maxAttempts: number;
  /** The version the job was enqueued with. */
  version: number;
}

export interface JobContext<C extends Catalog, N extends JobName<C> = JobName<C>> {
  /** Aborts when the lease is lost, the job is cancelled, or the worker's close grace runs out. */
  signal: AbortSignal;
  /** Records progress (0-100), visible in `handle.status()`. */
  progress(percent: number): Promise<void>;
  /**
   * Replaces this job's stored payload (in the current version's shape, checked here and by the server), so a
   * later attempt, after a failure or a lost lease, starts from it: a checkpoint. The running handler's
   * `job.payload` is left as it was.
   */
  updatePayload(payload: PayloadInput<C, N>): Promise<void>;
  /**
   * Atomically ends this job and enqueues `payload` as a job of `name` in its place; the handler's return value
   * is then ignored. Takes the enqueue options but `debounce`, `idempotencyTtlMs` and `idempotencyUntil`.
   */
  moveTo<M extends JobName<C>>(name: M, payload: PayloadInput<C, M>, options?: MoveToOptions): Promise<void>;
  /**
   * Whether the job runs after children: it was enqueued with children, or an earlier run of its handler
   * returned `ctx.waitForChildren`, and they have all ended. `false` for a job that never had children.
   */
  readonly resumed: boolean;
  /**
   * This job's children, in enqueue order (those it was enqueued with, then those of each `waitForChildren`),
   * each with its state and, typed by its job type, its result or last error. Empty for a job without children.
   */
  readonly children: readonly FlowChild<C>[];
  /**
   * The results of this job's children of type `name` that completed, in enqueue order, parsed by that type's
   * `result` schema as `handle.result()` parses them. A child that did not complete (it died under
   * `onFailure: 'ignore'` or `'continue'`) has none: `ctx.children` shows its error.
   */
  childResults<M extends JobName<C>>(name: M): Promise<ResultOutput<C, M>[]>;
  /**
   * Ends this attempt by enqueueing `children` (made by `sdk.child.<name>`), in one atomic step with parking
   * this job as `waiting-children`: its handler runs again, with `ctx.resumed`, once they have all ended. The
   * attempt is not counted, nor is it a failure. Return what it resolves to: `return ctx.waitForChildren([…])`.
   */
  waitForChildren(children: readonly ChildJob<JobName<C>>[]): Promise<WaitingForChildren>;
  /**
   * Ends this attempt without counting it (BullMQ's `moveToDelayed`): the job goes back to `scheduled` and runs
   * again `ms` milliseconds from now (above 0, at most a year), keeping its id, payload and flow links; the next
   * run has the same `job.attempt` as this one, so a delayed attempt never counts toward `maxAttempts`. Return
   * what it resolves to: `return ctx.delay(60_000)`. Rejects with `LEASE_LOST` when this worker no longer holds
   * the job (nothing changed then).
   */
  delay(ms: number): Promise<Delayed>;
  /** `delay` until `date` (a valid Date; one already past makes the job ready again at once). */
  retryAt(date: Date): Promise<Delayed>;
  /**
   * Holds the whole job type for `ms` milliseconds (above 0, at most a day) across all workers and servers, as
   * after an upstream's 429 (BullMQ's `worker.rateLimit` with `RateLimitError`): no job of the type starts until
   * then; this job goes back to ready, its attempt not counted. Return what it resolves to:
   * `return ctx.rateLimited(30_000)`. Rejects with `LEASE_LOST` when this worker no longer holds the job.
   */
  rateLimited(ms: number): Promise<RateLimited>;
}

declare const waiting: unique symbol;

/** What `ctx.waitForChildren` resolves to, for the handler to return: the job waits for its children. */
export interface WaitingForChildren {
  readonly [waiting]: true;
}

declare const delayed: unique symbol;

/** What `ctx.delay` and `ctx.retryAt` resolve to, for the handler to return: the job waits again, uncounted. */
export interface Delayed {
  readonly [delayed]: true;
}

declare const rateLimited: unique symbol;

/** What `ctx.rateLimited` resolves to, for the handler to return: the type is held, the job ready again. */
export interface RateLimited {
  readonly [rateLimited]: true;
}

/** What a handler returns when it ended its attempt itself rather than with a result. */
export type EndedAttempt = WaitingForChildren | Delayed | RateLimited;

export type Handler<C extends Catalog, N extends JobName<C>> = (
  job: ConsumedJob<PayloadOutput<C, N>>,
  ctx: JobContext<C, N>,
) => Promise<ResultInput<C, N> | EndedAttempt> | ResultInput<C, N> | EndedAttempt;

export interface ConsumeOptions {
  /** Jobs run at once. @defaultValue 1 */
  concurrency?: number | undefined;
  /**
   * Jobs claimed ahead and held, leased, in a local queue until a slot frees (like graphile-worker's local
   * queue): a finished job's slot starts the next one without a round trip, and claims come in fewer, larger
   * batches. Their leases are kept alive while they wait, and `close()` runs them too. A prefetched job waits
   * in this worker even when another worker is idle, so keep it small when jobs are slow. A job type with a
   * `concurrency` limit (`admin.setLimits`) is not prefetched: a held job would take one of the type's places
   * while it waits, so the worker holds only the jobs it runs, as its claims' answers tell it.
   *
   * Whether prefetched or not, a job is started only while its lease has more than a tenth of its length left
   * (at most 1 s): one whose lease ran out, or nearly, before it could start (this process was paused, or
   * the claim's answer or a slot came late) may be another worker's already, so it is handed back unstarted,
   * ready again at once with its attempt not counted, and reported to `onError` as `LEASE_LOST`.
   * @defaultValue 0
   */
  prefetch?: number | undefined;
  /**
   * Claim requests that may be out at once, each asking for a share of the free capacity. More lanes can keep a
   * worker fed when the server is far away (round trips long next to handler time); on a near server one lane
   * was fastest in our measurements. Each lane is one more waiting request when idle.
   * @defaultValue 1
   */
  claimLanes?: number | undefined;
  /**
   * How long one claim request waits on the server for work. Its request's time limit is this plus the
   * client's `timeoutMs`.
   * @defaultValue 25_000
   */
  pollWaitMs?: number | undefined;
  /** How long `close()` lets running jobs finish before aborting their signals. @defaultValue 30_000 */
  closeGraceMs?: number | undefined;
  /**
   * Called with each error the worker handles itself (a claim that failed, a lost ack, a failed report, the
   * error that stopped it), never with handler errors, instead of logging it.
   * @defaultValue each logged: an outage once, with what to check, and once more when it ends
   */
  onError?: ((error: unknown) => void) | undefined;
  /**
   * Where the worker says what happens to it: connection trouble, each failed attempt (job id, attempt, error
   * and the handler's stack), and why it stopped. `false`: nothing.
   * @defaultValue the client's `logger`
   */
  logger?: Logger | false | undefined;
  /** Reported to the server's worker registry. @defaultValue the caller's address, as the server sees it */
  host?: string | undefined;
}

export interface Worker {
  /** Stops claiming, lets running jobs finish (up to `closeGraceMs`), sends their outcomes, then resolves. */
  close(): Promise<void>;
  /**
   * Resolves when the worker has stopped after `close()`. Rejects when it stopped on its own, after its running
   * jobs finished, because no retry can help: the server refused its token (`UNAUTHORIZED`; a token function
   * is asked once more first) or a scope it needs (`FORBIDDEN`, naming the scope, e.g. `register:<job>` for a
   * catalog not deployed yet). That error is also logged, or given to `onError`.
   */
  readonly closed: Promise<void>;
}
