import { WorkqError } from '../errors.ts';
import { isFinishedState, type JobStatus } from '../jobs.ts';
import { AdminMoves } from './admin-moves.ts';
import { type ClaimedJob, type ClaimInput, type ClaimOutcome, Claims, claimRequest, toClaimedJob } from './claims.ts';
import { type Clock, systemClock } from './clock.ts';
import { checkLimits, FlowControl, type LimitsChange, type QueueInfo } from './flow-control.ts';
import { FlowEndNotices } from './flow-end-notices.ts';
import { Flows } from './flows.ts';
import type { SnoozeUntil } from './handler-scheduling.ts';
import { checkBatch, checkName } from './input-checks.ts';
import { insertDistinct } from './inserts.ts';
import { JobEventEmitter, type JobEventSink } from './job-events.ts';
import { type ListQuery, listFilter, toJobPage } from './job-listing.ts';
import { type AttemptFailure, type CompleteOutcome, LeasedJobs } from './leased-jobs.ts';
import {
  type CancelledListener,
  type FinishedListener,
  LocalListeners,
  type ReadyListener,
} from './local-listeners.ts';
import { batchSettings, buildNewJob, type EnqueueInput, type EnqueueResult } from './new-job.ts';
import { DEFAULT_HISTORY_RETENTION_MS, type ResolvedJobOptions } from './options.ts';
import { visibleState } from './status.ts';
import {
  type CountScope,
  type JobCount,
  type LeaseRef,
  type NewJob,
  type Store,
  WORKER_REGISTRY_BOUNDS,
} from './store.ts';

export type { ClaimedJob, ClaimInput } from './claims.ts';
export type { ListQuery } from './job-listing.ts';
export type { CompleteOutcome } from './leased-jobs.ts';
export type { CancelledListener, FinishedListener, ReadyListener } from './local-listeners.ts';
export type { EnqueueInput, EnqueueResult } from './new-job.ts';

export interface EngineOptions {
  store: Store;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** Engine-wide job defaults, below each job type's own. */
  defaults?: Partial<ResolvedJobOptions>;
  /** How long finished jobs are kept as history. @defaultValue 7 days */
  historyRetentionMs?: number;
  /** How often claims sweep expired leases back to the queue. @defaultValue 1000 */
  leaseSweepIntervalMs?: number;
  /**
   * How long a server keeps the flow-control settings (pause, limits) it read before it reads them again;
   * a change made through another server reaches it sooner where the store notifies. They only pick which
   * claim a type gets first: the store's claim decides whether they hold it back. @defaultValue 1000
   */
  settingsRefreshMs?: number;
  /** Where job events go (the server's event hub). @defaultValue none: no events are built */
  events?: JobEventSink;
}

/**
 * The queue engine: every queue operation, written once over a `Store`.
 * It owns policy (defaults, retries, backoff, lease sweeps, retention); the
 * store owns atomicity.
 */
export class Engine {
  readonly store: Store;
  readonly clock: Clock;
  private readonly defaults: Partial<ResolvedJobOptions> | undefined;
  private readonly historyRetentionMs: number;
  private readonly listeners = new LocalListeners();
  /** Pause, limits and groups, and the settings this server read of them (see `FlowControl`). */
  readonly flow: FlowControl;
  /** The claim, from a consumer's request to its leased jobs (see `Claims`): what the claim dispatcher calls. */
  readonly claims: Claims;
  /** Parents that wait for their children (see `Flows`): enqueue a flow, park a running job, list children. */
  readonly flows: Flows;
  private readonly events: JobEventEmitter;
  private readonly flowEnds: FlowEndNotices;
  private readonly leased: LeasedJobs;
  private readonly moves: AdminMoves;

  constructor(options: EngineOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.defaults = options.defaults;
    this.historyRetentionMs = options.historyRetentionMs ?? DEFAULT_HISTORY_RETENTION_MS;
    this.flow = new FlowControl(this.store, this.clock, options.settingsRefreshMs ?? 1000);
    this.events = new JobEventEmitter(options.events, (ids) =>
      this.store.listJobs({ ids, limit: ids.length, withoutPayload: true }),
    );
    this.flowEnds = new FlowEndNotices(this.store, this.listeners, this.events);
    this.leased = new LeasedJobs({
      store: this.store,
      clock: this.clock,
      flow: this.flow,
      events: this.events,
      flowEnds: this.flowEnds,
      listeners: this.listeners,
      defaults: this.defaults,
    });
    this.claims = new Claims(
      this.store,
      this.flow,
      this.leased,
      this.events,
      this.flowEnds,
      options.leaseSweepIntervalMs ?? 1000,
    );
    const { store, clock, flow, events, listeners, defaults } = this;
    this.flows = new Flows({ store, clock, flow, events, listeners, defaults });
    this.moves = new AdminMoves({ store, clock, flow, flows: this.flows, events, listeners, defaults });
  }

  /** Called with a job name whenever jobs of it may have become ready in this process. */
  onReady(listener: ReadyListener): () => void {
    return this.listeners.onReady(listener);
  }

  /** Called when a job finishes (completed, dead, cancelled) in this process. */
  onFinished(listener: FinishedListener): () => void {
    return this.listeners.onFinished(listener);
  }

  /**
   * Called once for each job cancelled in this process, directly or with its flow, with the worker that last
   * held it (`null`: it never ran), so that a lease extension waiting for that worker answers at once.
   */
  onCancelled(listener: CancelledListener): () => void {
    return this.listeners.onCancelled(listener);
  }

  async enqueue(input: EnqueueInput): Promise<EnqueueResult> {
    const [result] = await this.enqueueMany([input]);
    return result as EnqueueResult;
  }

  /** Enqueues a batch in one store round trip; results are in input order. */
  async enqueueMany(inputs: readonly EnqueueInput[]): Promise<EnqueueResult[]> {
    checkBatch(inputs.length, 'enqueueMany');
    if (inputs.length === 0) return [];
    const now = this.clock.now();
    const settingsOf = batchSettings(this.defaults, now);
    return this.insert(
      inputs.map((input) => this.newJob(input, now, null, settingsOf)),
      now,
    );
  }

  /** Leases up to `limit` ready jobs of one type, honouring its pause and limits; see `Store.claimJobs`. */
  async claim(input: ClaimInput): Promise<ClaimedJob[]> {
    return (await this.claimUnderLimits(input)).jobs;
  }

  /**
   * `claim`, also saying whether the type is paused and, when its rate limit holds further starts back,
   * when the next may start (see `LimitedClaim`).
   */
  async claimUnderLimits(input: ClaimInput): Promise<ClaimOutcome> {
    const { jobs, paused, nextStartAt } = await this.claims.completeAndClaim([], claimRequest(input, this.clock.now()));
    return { jobs, paused, nextStartAt };
  }

  /**
   * Whether this store can hand jobs over: `enqueueForClaim` lease a new job to a waiting claim in its insert
   * (`Store.handoff`). Per job type, its settings decide too (`FlowControl.leavesClaimsFree`).
   */
  get handsOver(): boolean {
    return this.store.handoff !== undefined;
  }

  /**
   * Enqueues one job for a consumer already waiting with `claim`: where the
   * store can, the insert leases the job to that claim in the same step, which
   * saves the claim its round trip. `claimed` is null when it did not (no
   * such store step, a job not due yet or outside the claim's versions, or
   * another job ready first); the job was then enqueued as `enqueue` does,
   * and announced. Under an idempotency key a retained job holds already, it
   * is that job, as from `enqueue`, and `claimed` is null.
   */
  async enqueueForClaim(
    input: EnqueueInput,
    claim: ClaimInput,
  ): Promise<{ result: EnqueueResult; claimed: ClaimedJob | null }> {
    const now = this.clock.now();
    const job = this.newJob(input, now, null);
    await this.flow.placeInGroups([job]);
    // A debounced job may replace a waiting one, which only `debounceJobs` does. A job with a time limit is
    // handed over too: the handoff sets its attempt's deadline as a claim does.
    const handed =
      this.handsOver && job.debounceKey === null && (await this.flow.leavesClaimsFree(job.name))
        ? await this.store.handoff?.insertAndClaimJob(job, claimRequest(claim, now))
        : undefined;
    // No such store step, or the job's key was taken (the insert then returns the job holding it).
    if (!handed) {
      const [result] = await this.insert([job], now);
      return { result: result as EnqueueResult, claimed: null };
    }
    const { job: record, claimed } = handed;
    if (!claimed) this.listeners.announce([record]);
    this.events.enqueued([record], now);
    const result = { id: record.id, created: true, state: visibleState(record, now) };
    const claimedJob = claimed && toClaimedJob(claimed);
    if (claimedJob) this.events.started([claimedJob], now);
    return { result, claimed: claimedJob };
  }

  /** Completes the job `lease` holds; `LEASE_LOST` when it holds it no more, also when it completed it already. */
  complete(lease: LeaseRef, result?: unknown): Promise<void> {
    return this.leased.complete(lease, result);
  }

  /**
   * Completes a batch in one store round trip; a lost lease fails only its
   * own item. An item whose lease already completed its job is `repeated`.
   */
  completeMany(items: readonly (LeaseRef & { result?: unknown })[]): Promise<CompleteOutcome[]> {
    return this.leased.completeMany(items);
  }

  /**
   * Gives claimed jobs back unstarted, for a claim whose client went away
   * before it was answered: ready again in their place, their attempt not
   * counted. A job whose lease is lost already is left as it is. Resolves to
   * the ids released.
   */
  release(jobs: readonly (LeaseRef & { name: string })[]): Promise<string[]> {
    return this.leased.release(jobs);
  }

  /**
   * Records a failed attempt: retried after its backoff while attempts remain
   * and the failure is not permanent, otherwise dead. Resolves to the new status.
   */
  fail(lease: LeaseRef, failure: AttemptFailure): Promise<JobStatus> {
    return this.leased.fail(lease, failure);
  }

  /**
   * Extends a held lease by `leaseMs` (default: the job's own, which costs one more read) from now, but no
   * later than the attempt's deadline (a time limit, `timeoutMs`); resolves to the lease's expiry as stored, the
   * deadline where it capped the extension. `VALIDATION` for a `leaseMs` outside `LEASE_MS_LIMITS`.
   */
  extend(lease: LeaseRef, leaseMs?: number): Promise<{ leaseExpiresAt: Date }> {
    return this.leased.extend(lease, leaseMs);
  }

  /** Records progress (0-100) on the held job. */
  progress(lease: LeaseRef, progress: number): Promise<void> {
    return this.leased.progress(lease, progress);
  }

  /**
   * Replaces the held job's payload with `payload`, written in `version` of
   * job `name` (checked against the job), so its later attempts start from
   * it: a checkpoint that survives a retry. Fenced like `progress`.
   */
  updatePayload(lease: LeaseRef, change: { name: string; version: number; payload: unknown }): Promise<void> {
    return this.leased.updatePayload(lease, change);
  }

  /**
   * Atomically completes the held job and enqueues `next` in its place. Under an idempotency key a retained
   * job of `next`'s type holds already, the job moves into that job, which is returned as `enqueue` returns
   * it (`created: false`) and left unchanged. Resolves to the next job. `debounce`, `idempotencyTtlMs` and
   * `idempotencyUntil` are `VALIDATION` errors here.
   */
  moveTo(lease: LeaseRef, next: EnqueueInput): Promise<EnqueueResult> {
    return this.leased.moveTo(lease, next);
  }

  /**
   * Ends the held job's attempt without counting it (`ctx.delay`, `ctx.retryAt`): it waits again, to run at
   * now + `delayMs` or at `runAt`, keeping its id, payload and flow links, and its next claim runs it with the
   * attempt number this one had. `VALIDATION` for a `delayMs` that is not above 0 and at most
   * `HANDLER_SCHEDULING_LIMITS.delayMs`, or a `runAt` that is not a valid Date; `LEASE_LOST`, changing
   * nothing, when the lease does not hold. `job.name` only picks whose claims to wake.
   */
  snooze(job: LeaseRef & { name: string }, until: SnoozeUntil): Promise<{ runAt: Date }> {
    return this.leased.snooze(job, until);
  }

  /**
   * Holds the held job's type for `holdMs` (`ctx.rateLimited`: an upstream said 429): no claim, on any server,
   * leases a job of the type until then (a longer hold already stored stays). The job goes back to ready, its
   * attempt not counted. `VALIDATION` for a `holdMs` not above 0 and at most
   * `HANDLER_SCHEDULING_LIMITS.holdMs`; `LEASE_LOST`, changing nothing, when the lease does not hold. Resolves
   * to when the type's hold ends.
   */
  rateLimited(lease: LeaseRef, holdMs: number): Promise<{ heldUntil: Date }> {
    return this.leased.rateLimited(lease, holdMs);
  }

  /** Cancels a job that has not finished. Resolves to `true` if this call cancelled it. */
  async cancel(id: string): Promise<boolean> {
    const now = this.clock.now();
    const cancelled = await this.store.cancelJob(id, now);
    if (cancelled) {
      this.listeners.emitCancelled(id, cancelled.workerId);
      this.events.cancelled(cancelled, now);
      this.flowEnds.finished(cancelled, 'cancelled', now);
    }
    return cancelled !== null;
  }

  /** The job's status, with every kept attempt's error (and a parent's children), or a `NOT_FOUND` error. */
  async get(id: string): Promise<JobStatus> {
    // A status never shows the payload: it is left unread, whatever its size.
    const job = await this.store.getJob(id, { withoutPayload: true });
    if (!job) throw new WorkqError('NOT_FOUND', `No job with id ${id} (it may have been pruned from history).`);
    return this.flows.status(job);
  }

  /** A page of the jobs `query` matches, by id (creation time) either way; pass `nextCursor` back for the next. */
  async list(query: ListQuery = {}): Promise<{ jobs: JobStatus[]; nextCursor: string | null }> {
    const now = this.clock.now();
    const { filter, limit } = listFilter(query, now);
    return toJobPage(await this.store.listJobs({ ...filter, withoutPayload: true }), limit, now);
  }

  /**
   * Says that jobs of `name` finished: where its settings limit how many run at once, claims waiting for a
   * free place (here, and where the store notifies, on other servers) are woken. Nothing for other types.
   */
  freed(name: string): void {
    this.leased.freed(name);
  }

  /**
   * Claims lease nothing of `name` until `resume`, on every server; its jobs keep arriving. Resolves once
   * the pause is stored: every claim that starts after, on any server, leases nothing.
   */
  async pause(name: string): Promise<void> {
    await this.flow.change(checkName(name), { paused: true });
  }

  /**
   * Ends a `pause` and lifts a hold (`ctx.rateLimited`) in one write: claims of `name` lease again at once, and
   * the ones waiting on this server are woken.
   */
  async resume(name: string): Promise<void> {
    await this.flow.change(checkName(name), { paused: false, heldUntil: null });
    this.listeners.emitReady(name);
  }

  /**
   * Changes the limits of `name` (see `QueueLimits`); `null` clears one. Resolves to the limits now set, once
   * they are stored: every claim that starts after, on any server, honours them.
   */
  async setLimits(name: string, limits: LimitsChange): Promise<QueueInfo['limits']> {
    const change = checkLimits(limits);
    const settings = await this.flow.change(checkName(name), change);
    this.listeners.emitReady(name);
    return {
      concurrency: settings.concurrency,
      rateLimit: settings.rateLimit,
      groupConcurrency: settings.groupConcurrency,
      groupOrder: settings.groupOrder,
    };
  }

  /**
   * Every job type with jobs or settings: paused or not, held or not, its limits, and its job counts by state
   * and version.
   */
  async queues(): Promise<QueueInfo[]> {
    return this.flow.queues(await this.counts(), this.clock.now());
  }

  /**
   * Job counts by name, version and state; with scope `'live'`, of the jobs not finished only (`scheduled`,
   * `ready`, `active`), which stores count without reading finished history: what a frequent count takes.
   */
  async counts(scope: CountScope = 'all'): Promise<JobCount[]> {
    const counts = await this.store.countJobs(this.clock.now(), scope);
    return scope === 'all' ? counts : counts.filter((row) => !isFinishedState(row.state));
  }

  /** Re-enqueues dead jobs (by id, or all of one type) with fresh attempts. Resolves to how many. */
  retryDead(target: { name?: string; ids?: readonly string[] }): Promise<number> {
    return this.moves.retryDead(target);
  }

  /** Runs a scheduled job now (`admin.promote`); see `AdminMoves.promote`. */
  promote(id: string): Promise<boolean> {
    return this.moves.promote(id);
  }

  /** Runs a finished job again in place, keeping its id (`admin.retry`); see `AdminMoves.retry`. */
  retry(id: string): Promise<boolean> {
    return this.moves.retry(id);
  }

  /** Puts a cancelled job that never started back to waiting (`admin.restore`); see `AdminMoves.restore`. */
  restore(id: string): Promise<boolean> {
    return this.moves.restore(id);
  }

  /** Deletes the waiting job of `name` holding key `key` (`admin.removeByKey`); see `AdminMoves.removeByKey`. */
  removeByKey(name: string, key: string): Promise<boolean> {
    return this.moves.removeByKey(name, key);
  }

  /** Enqueues a finished job again as a new job (`admin.replay`); see `AdminMoves.replay`. */
  replay(id: string): Promise<EnqueueResult> {
    return this.moves.replay(id);
  }

  /**
   * Deletes up to `limit` finished jobs past their retention: their own (`EnqueueOptions.retention`) for the
   * end they came to, else the history retention. Resolves to how many.
   */
  async prune(limit = 10_000): Promise<number> {
    const now = this.clock.now();
    return this.store.pruneJobs(new Date(now.getTime() - this.historyRetentionMs), limit, now);
  }

  /** Deletes the worker-registry rows not seen for `WORKER_REGISTRY_BOUNDS.retentionMs`. Resolves to how many. */
  async pruneWorkers(): Promise<number> {
    const now = this.clock.now();
    return this.store.pruneWorkers(new Date(now.getTime() - WORKER_REGISTRY_BOUNDS.retentionMs));
  }

  /**
   * Returns jobs whose lease expired to the queue (or dead, with attempts used up), at most once per
   * `leaseSweepIntervalMs`, which claims share as they sweep on their way (see `Claims`).
   */
  sweepExpiredLeases(now = this.clock.now()): Promise<{ requeued: number; dead: number }> {
    return this.claims.sweepExpiredLeases(now);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await this.store.close();
  }

  /** The job to insert for `input`; a batch passes one `batchSettings` for all its jobs. */
  private newJob(
    input: EnqueueInput,
    now: Date,
    replayOf: string | null,
    settingsOf = batchSettings(this.defaults, now),
  ): NewJob {
    return buildNewJob(input, now, replayOf, settingsOf);
  }

  /** Inserts new jobs made at `now` and announces those created. */
  private async insert(jobs: readonly NewJob[], now: Date): Promise<EnqueueResult[]> {
    await this.flow.placeInGroups(jobs);
    const outcomes = await insertDistinct(this.store, jobs);
    const created = outcomes.filter((o) => o.created).map((o) => o.job);
    this.listeners.announce(created);
    this.events.enqueued(created, now);
    return outcomes.map(({ job, created }) => ({ id: job.id, created, state: visibleState(job, now) }));
  }
}

export function createEngine(options: EngineOptions): Engine {
  return new Engine(options);
}
