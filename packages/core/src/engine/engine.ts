import { WorkqError } from '../errors.ts';
import { JOB_STATES, type JobError, type JobState, type JobStatus, MAX_BATCH_SIZE } from '../jobs.ts';
import { backoffDelayMs } from './backoff.ts';
import { type ClaimedJob, type ClaimInput, claimRequest, toClaimedJob } from './claims.ts';
import { type Clock, systemClock } from './clock.ts';
import { checkLimits, FlowControl, type LimitsChange, type QueueInfo } from './flow-control.ts';
import { insertDistinct, KEY_HOLDER_TRIES, keyHolderGone } from './inserts.ts';
import { JobEventEmitter, type JobEventSink } from './job-events.ts';
import { batchSettings, buildNewJob, type EnqueueInput } from './new-job.ts';
import { DEFAULT_HISTORY_RETENTION_MS, type ResolvedJobOptions } from './options.ts';
import { toJobStatus, visibleState } from './status.ts';
import type { JobCount, JobRecord, LeaseRef, ListFilter, NewJob, Store, StoredState } from './store.ts';
import { fromStoredValue, toStoredText, toStoredValue } from './stored-value.ts';

export type { ClaimedJob, ClaimInput } from './claims.ts';
export type { EnqueueInput } from './new-job.ts';

export interface EnqueueResult {
  id: string;
  /** `false` when an idempotency key returned an existing job. */
  created: boolean;
  state: JobStatus['state'];
}

export interface ListQuery {
  name?: string;
  state?: JobState;
  /** Page size, 1-1000. @defaultValue 100 */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface CompleteOutcome {
  id: string;
  /** This call completed the job. */
  ok: boolean;
  /**
   * Not this call but an earlier ack under the same lease completed the job:
   * a repeat from a worker that never read the first answer. Nothing changed.
   */
  repeated: boolean;
}

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
   * a change made through another server reaches it sooner where the store notifies. @defaultValue 1000
   */
  settingsRefreshMs?: number;
  /** Where job events go (the server's event hub). @defaultValue none: no events are built */
  events?: JobEventSink;
}

export type ReadyListener = (name: string) => void;
export type FinishedListener = (id: string, state: StoredState) => void;

function leaseLost(id: string): WorkqError {
  return new WorkqError(
    'LEASE_LOST',
    `Job ${id} is not held by this lease any more (it expired, the job was cancelled, or another worker claimed it); nothing was changed.`,
  );
}

function checkBatch(size: number, what: string): void {
  if (size > MAX_BATCH_SIZE) {
    throw new WorkqError('VALIDATION', `${what} takes at most ${MAX_BATCH_SIZE} items; got ${size}.`);
  }
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
  private readonly leaseSweepIntervalMs: number;
  private lastSweepMs = Number.NEGATIVE_INFINITY;
  private readonly readyListeners = new Set<ReadyListener>();
  private readonly finishedListeners = new Set<FinishedListener>();
  /** Pause, limits and the claims that honour them (see `FlowControl`). */
  readonly flow: FlowControl;
  private readonly events: JobEventEmitter;

  constructor(options: EngineOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.defaults = options.defaults;
    this.historyRetentionMs = options.historyRetentionMs ?? DEFAULT_HISTORY_RETENTION_MS;
    this.leaseSweepIntervalMs = options.leaseSweepIntervalMs ?? 1000;
    this.flow = new FlowControl(this.store, this.clock, options.settingsRefreshMs ?? 1000);
    this.events = new JobEventEmitter(options.events, (ids) => this.store.listJobs({ ids, limit: ids.length }));
  }

  /** Called with a job name whenever jobs of it may have become ready in this process. */
  onReady(listener: ReadyListener): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  /** Called when a job finishes (completed, dead, cancelled) in this process. */
  onFinished(listener: FinishedListener): () => void {
    this.finishedListeners.add(listener);
    return () => this.finishedListeners.delete(listener);
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
  async claimUnderLimits(
    input: ClaimInput,
  ): Promise<{ jobs: ClaimedJob[]; paused: boolean; nextStartAt: Date | null }> {
    const now = this.clock.now();
    await this.sweepExpiredLeases(now);
    const outcome = await this.flow.claim(claimRequest(input, now));
    const claimed = outcome.jobs.map(toClaimedJob);
    this.events.started(claimed, now);
    return { jobs: claimed, paused: outcome.paused, nextStartAt: outcome.nextStartAt };
  }

  /** Whether `enqueueForClaim` can lease a new job in its insert (`capabilities.insertAndClaim`). */
  get handsOver(): boolean {
    return this.store.capabilities.insertAndClaim && this.store.insertAndClaimJob !== undefined;
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
    // A debounced job may replace a waiting one, which only `debounceJobs` does.
    const handed =
      this.handsOver && job.debounceKey === null && (await this.flow.handsOver(job.name))
        ? await this.store.insertAndClaimJob?.(job, claimRequest(claim, now))
        : undefined;
    // No such store step, or the job's key was taken (the insert then returns the job holding it).
    if (!handed) {
      const [result] = await this.insert([job], now);
      return { result: result as EnqueueResult, claimed: null };
    }
    const { job: record, claimed } = handed;
    if (!claimed) this.announce([record]);
    this.events.enqueued([record], now);
    const result = { id: record.id, created: true, state: visibleState(record, now) };
    const claimedJob = claimed && toClaimedJob(claimed);
    if (claimedJob) this.events.started([claimedJob], now);
    return { result, claimed: claimedJob };
  }

  /** Completes the job `lease` holds; `LEASE_LOST` when it holds it no more, also when it completed it already. */
  async complete(lease: LeaseRef, result?: unknown): Promise<void> {
    const [outcome] = await this.completeMany([{ ...lease, result }]);
    if (!outcome?.ok) throw leaseLost(lease.id);
  }

  /**
   * Completes a batch in one store round trip; a lost lease fails only its
   * own item. An item whose lease already completed its job is `repeated`.
   */
  async completeMany(items: readonly (LeaseRef & { result?: unknown })[]): Promise<CompleteOutcome[]> {
    checkBatch(items.length, 'completeMany');
    if (items.length === 0) return [];
    const now = this.clock.now();
    const done = new Set(
      await this.store.completeJobs(
        items.map(({ id, leaseToken, result }) => ({ id, leaseToken, result: toStoredValue(result) })),
        now,
      ),
    );
    for (const id of done) this.emitFinished(id, 'completed');
    if (this.events.listening)
      this.events.completed(
        items.filter(({ id }) => done.has(id)),
        now,
      );
    const repeats = await this.completedEarlier(items.filter(({ id }) => !done.has(id)));
    return items.map((item) => ({ id: item.id, ok: done.has(item.id), repeated: repeats.has(item) }));
  }

  /** Of leases whose ack found no lease to end, those whose job that very lease completed (one store read). */
  private async completedEarlier<L extends LeaseRef>(leases: readonly L[]): Promise<Set<L>> {
    if (leases.length === 0) return new Set();
    const ids = [...new Set(leases.map((lease) => lease.id))];
    const completed = await this.store.listJobs({ ids, states: ['completed'], limit: ids.length });
    const tokens = new Map(completed.map((job) => [job.id, job.leaseToken]));
    return new Set(leases.filter((lease) => tokens.get(lease.id) === lease.leaseToken));
  }

  /**
   * Gives claimed jobs back unstarted, for a claim whose client went away
   * before it was answered: ready again in their place, their attempt not
   * counted. A job whose lease is lost already is left as it is. Resolves to
   * the ids released.
   */
  async release(jobs: readonly (LeaseRef & { name: string })[]): Promise<string[]> {
    checkBatch(jobs.length, 'release');
    if (jobs.length === 0) return [];
    const leases = jobs.map(({ id, leaseToken }) => ({ id, leaseToken }));
    const released = await this.store.releaseJobs(leases, this.clock.now());
    this.events.released(released);
    const releasedIds = new Set(released);
    const names = new Set(jobs.filter((job) => releasedIds.has(job.id)).map((job) => job.name));
    for (const name of names) this.emitReady(name);
    return released;
  }

  /**
   * Records a failed attempt: retried after its backoff while attempts remain
   * and the failure is not permanent, otherwise dead. Resolves to the new status.
   */
  async fail(lease: LeaseRef, failure: { message: string; permanent?: boolean }): Promise<JobStatus> {
    const now = this.clock.now();
    const job = await this.store.getJob(lease.id);
    if (!job || !holdsLease(job, lease, now)) throw leaseLost(lease.id);
    const error: JobError = {
      message: toStoredText(String(failure.message).slice(0, 4000)),
      attempt: job.attempts,
      at: now,
    };
    if (failure.permanent) error.permanent = true;
    const retry = !failure.permanent && job.attempts < job.maxAttempts;
    const retryAt = retry ? retryTime(job, now) : null;
    if (!(await this.store.failJob(lease, { error, retryAt }, now))) throw leaseLost(lease.id);
    this.freed(job.name);
    this.events.failed(job, error, retryAt !== null, now);
    const updated = failedRecord(job, error, retryAt, now);
    if (updated.state === 'dead') this.emitFinished(updated.id, 'dead');
    const status = toJobStatus(updated, now);
    // A retry due at once is ready work, like a new job: consumers parked on this server wake for it.
    if (status.state === 'ready') this.emitReady(updated.name);
    return status;
  }

  /** Extends a held lease by `leaseMs` (default: the job's own, which costs one more read) from now. */
  async extend(lease: LeaseRef, leaseMs?: number): Promise<{ leaseExpiresAt: Date }> {
    const now = this.clock.now();
    let lengthMs = leaseMs;
    if (lengthMs === undefined) {
      const job = await this.store.getJob(lease.id);
      if (!job || !holdsLease(job, lease, now)) throw leaseLost(lease.id);
      lengthMs = job.leaseMs;
    }
    const expiresAt = new Date(now.getTime() + lengthMs);
    if (!(await this.store.extendLease(lease, expiresAt, now))) throw leaseLost(lease.id);
    return { leaseExpiresAt: expiresAt };
  }

  async progress(lease: LeaseRef, progress: number): Promise<void> {
    if (typeof progress !== 'number' || !Number.isFinite(progress) || progress < 0 || progress > 100) {
      throw new WorkqError('VALIDATION', `progress must be a number from 0 to 100; got ${String(progress)}.`);
    }
    const now = this.clock.now();
    if (!(await this.store.recordProgress(lease, progress, now))) throw leaseLost(lease.id);
    this.events.progress(lease.id, progress, now);
  }

  /**
   * Replaces the held job's payload with `payload`, written in `version` of
   * job `name` (checked against the job), so its later attempts start from
   * it: a checkpoint that survives a retry. Fenced like `progress`.
   */
  async updatePayload(lease: LeaseRef, change: { name: string; version: number; payload: unknown }): Promise<void> {
    if (!Number.isInteger(change.version) || change.version < 1) {
      throw new WorkqError('VALIDATION', `version must be an integer of at least 1; got ${String(change.version)}.`);
    }
    const now = this.clock.now();
    const job = await this.store.getJob(lease.id);
    if (!job || !holdsLease(job, lease, now)) throw leaseLost(lease.id);
    if (job.name !== change.name) {
      throw new WorkqError('VALIDATION', `Job ${lease.id} is a "${job.name}" job, not "${change.name}".`);
    }
    const payload = toStoredValue(change.payload);
    if (!(await this.store.updatePayload(lease, { payload, version: change.version }, now))) throw leaseLost(lease.id);
  }

  /**
   * Atomically completes the held job and enqueues `next` in its place. Under an idempotency key a retained
   * job of `next`'s type holds already, the job moves into that job, which is returned as `enqueue` returns
   * it (`created: false`) and left unchanged. Resolves to the next job. `debounce` and `idempotencyTtlMs`
   * are `VALIDATION` errors here.
   */
  async moveTo(lease: LeaseRef, next: EnqueueInput): Promise<EnqueueResult> {
    const now = this.clock.now();
    if (next.options?.debounce !== undefined || next.options?.idempotencyTtlMs !== undefined) {
      throw new WorkqError(
        'VALIDATION',
        'moveTo takes neither debounce nor idempotencyTtlMs: the next job is made in the same step that completes this one. Enqueue it instead, or use an idempotencyKey.',
      );
    }
    const job = this.newJob(next, now, null);
    await this.flow.placeInGroups([job]);
    for (let tries = 1; ; tries++) {
      const moved = await this.store.moveJob(lease, job, now);
      if (!moved) throw leaseLost(lease.id);
      if (moved.job !== null) {
        this.emitFinished(lease.id, 'completed');
        this.events.completed([{ id: lease.id }], now);
        if (moved.created) {
          this.announce([moved.job]);
          this.events.enqueued([moved.job], now);
        }
        return { id: moved.job.id, created: moved.created, state: visibleState(moved.job, now) };
      }
      if (tries >= KEY_HOLDER_TRIES) throw keyHolderGone(`the next ${job.name} job`);
    }
  }

  /** Cancels a job that has not finished. Resolves to `true` if this call cancelled it. */
  async cancel(id: string): Promise<boolean> {
    const now = this.clock.now();
    const cancelled = await this.store.cancelJob(id, now);
    if (cancelled) {
      this.emitFinished(id, 'cancelled');
      this.events.cancelled(cancelled, now);
    }
    return cancelled !== null;
  }

  /** The job's status, or a `NOT_FOUND` error. */
  async get(id: string): Promise<JobStatus> {
    const job = await this.store.getJob(id);
    if (!job) throw new WorkqError('NOT_FOUND', `No job with id ${id} (it may have been pruned from history).`);
    return toJobStatus(job, this.clock.now());
  }

  /** A page of jobs by name and state, ordered by id (creation time); pass `nextCursor` back for the next page. */
  async list(query: ListQuery = {}): Promise<{ jobs: JobStatus[]; nextCursor: string | null }> {
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? 100)), MAX_BATCH_SIZE);
    const now = this.clock.now();
    const filter: ListFilter = { limit: limit + 1 };
    if (query.name !== undefined) filter.name = query.name;
    if (query.cursor !== undefined) filter.afterId = query.cursor;
    if (query.state === 'scheduled' || query.state === 'ready') {
      filter.states = ['waiting'];
      filter.due = { now, ready: query.state === 'ready' };
    } else if (query.state !== undefined) {
      if (!(JOB_STATES as readonly string[]).includes(query.state)) {
        throw new WorkqError(
          'VALIDATION',
          `state must be one of ${JOB_STATES.join(', ')}; got ${String(query.state)}.`,
        );
      }
      filter.states = [query.state];
    }
    const rows = await this.store.listJobs(filter);
    const page = rows.slice(0, limit);
    return {
      jobs: page.map((job) => toJobStatus(job, now)),
      nextCursor: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
    };
  }

  /**
   * Says that jobs of `name` finished: where its settings limit how many run at once, claims waiting for a
   * free place (here, and where the store notifies, on other servers) are woken. Nothing for other types.
   */
  freed(name: string): void {
    void this.flow.settingsOf(name).then(
      (settings) => {
        if (settings && (settings.concurrency !== null || settings.groupConcurrency !== null)) this.emitReady(name);
      },
      () => undefined,
    );
  }

  /**
   * Claims lease nothing of `name` until `resume`, on every server; its jobs keep arriving. Resolves once
   * every server holds its claims (see `settingsRefreshMs`).
   */
  async pause(name: string): Promise<void> {
    await this.flow.change(checkName(name), { paused: true }, { settle: true });
  }

  /** Ends a `pause`: claims of `name` lease again, and the ones waiting on this server are woken. */
  async resume(name: string): Promise<void> {
    await this.flow.change(checkName(name), { paused: false });
    this.emitReady(name);
  }

  /**
   * Changes the limits of `name` (see `QueueLimits`); `null` clears one. Resolves to the limits now set, once
   * every server's claims honour them (see `settingsRefreshMs`).
   */
  async setLimits(name: string, limits: LimitsChange): Promise<QueueInfo['limits']> {
    const settings = await this.flow.change(checkName(name), checkLimits(limits), { settle: true });
    this.emitReady(name);
    return {
      concurrency: settings.concurrency,
      rateLimit: settings.rateLimit,
      groupConcurrency: settings.groupConcurrency,
    };
  }

  /** Every job type with jobs or settings: paused or not, its limits, and its job counts by state and version. */
  async queues(): Promise<QueueInfo[]> {
    return this.flow.queues(await this.counts());
  }

  /** Job counts by name, version and state. */
  async counts(): Promise<JobCount[]> {
    return this.store.countJobs(this.clock.now());
  }

  /** Re-enqueues dead jobs (by id, or all of one type) with fresh attempts. Resolves to how many. */
  async retryDead(target: { name?: string; ids?: readonly string[] }): Promise<number> {
    if (target.ids) checkBatch(target.ids.length, 'retryDead');
    if (!target.name && !target.ids) throw new WorkqError('VALIDATION', 'retryDead needs a job name or ids.');
    const count = await this.store.retryDeadJobs(target, this.clock.now());
    if (count > 0 && target.name) this.emitReady(target.name);
    if (count > 0 && target.ids) for (const listener of this.readyListeners) listener('*');
    return count;
  }

  /** Enqueues a finished job again, as a new job with the same payload. Resolves to the new job's id. */
  async replay(id: string): Promise<EnqueueResult> {
    const job = await this.store.getJob(id);
    if (!job) throw new WorkqError('NOT_FOUND', `No job with id ${id} to replay.`);
    if (job.state === 'waiting' || job.state === 'active') {
      throw new WorkqError(
        'CONFLICT',
        `Job ${id} has not finished (state ${job.state}); only finished jobs can be replayed.`,
      );
    }
    const now = this.clock.now();
    const { priority, maxAttempts, backoff, leaseMs, order } = job;
    const input = { name: job.name, version: job.version, payload: fromStoredValue(job.payload) };
    // The replay keeps the trace context of the job it replays: its processing links to the original producer.
    const traceContext = job.traceContext ?? undefined;
    const group = job.group || undefined;
    const options = { priority, maxAttempts, backoff, leaseMs, order, traceContext, group };
    const replay = this.newJob({ ...input, options }, now, id);
    await this.flow.placeInGroups([replay]);
    const [outcome] = await insertDistinct(this.store, [replay]);
    if (!outcome) throw new WorkqError('UNAVAILABLE', 'The store returned no outcome for the replayed job.');
    this.announce([outcome.job]);
    this.events.enqueued([outcome.job], now);
    return { id: outcome.job.id, created: true, state: visibleState(outcome.job, now) };
  }

  /** Deletes up to `limit` finished jobs older than the history retention. Resolves to how many. */
  async prune(limit = 10_000): Promise<number> {
    const now = this.clock.now();
    return this.store.pruneJobs(new Date(now.getTime() - this.historyRetentionMs), limit);
  }

  /** Returns jobs whose lease expired to the queue (or dead, with attempts used up). */
  async sweepExpiredLeases(now = this.clock.now()): Promise<{ requeued: number; dead: number }> {
    if (now.getTime() - this.lastSweepMs < this.leaseSweepIntervalMs) return { requeued: 0, dead: 0 };
    this.lastSweepMs = now.getTime();
    return this.store.requeueExpiredLeases(now, {
      message: 'The lease expired before the worker finished (worker died, stalled or lost its connection).',
      code: 'LEASE_EXPIRED',
      at: now,
    });
  }

  async close(): Promise<void> {
    this.readyListeners.clear();
    this.finishedListeners.clear();
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
    this.announce(created);
    this.events.enqueued(created, now);
    return outcomes.map(({ job, created }) => ({ id: job.id, created, state: visibleState(job, now) }));
  }

  private announce(jobs: readonly JobRecord[]): void {
    for (const name of new Set(jobs.map((job) => job.name))) this.emitReady(name);
  }

  private emitReady(name: string): void {
    for (const listener of this.readyListeners) listener(name);
  }

  private emitFinished(id: string, state: StoredState): void {
    for (const listener of this.finishedListeners) listener(id, state);
  }
}

/** `job`, read while its lease held, as `Store.failJob` leaves it: the change the engine asked for applied. */
function failedRecord(job: JobRecord, error: JobError, retryAt: Date | null, now: Date): JobRecord {
  return {
    ...job,
    state: retryAt === null ? 'dead' : 'waiting',
    runAt: retryAt ?? job.runAt,
    error,
    leaseToken: null,
    leaseExpiresAt: null,
    finishedAt: retryAt === null ? now : job.finishedAt,
    updatedAt: now,
  };
}

function holdsLease(job: JobRecord, lease: LeaseRef, now: Date): boolean {
  return (
    job.state === 'active' &&
    job.leaseToken === lease.leaseToken &&
    job.leaseExpiresAt !== null &&
    job.leaseExpiresAt.getTime() > now.getTime()
  );
}

function checkName(name: string): string {
  if (typeof name !== 'string' || name === '' || name.length > 100) {
    throw new WorkqError(
      'VALIDATION',
      `A job type name is a non-empty string of at most 100 characters; got ${String(name)}.`,
    );
  }
  return name;
}

export function createEngine(options: EngineOptions): Engine {
  return new Engine(options);
}

/**
 * When a failed attempt runs again: after its backoff, or, with none, at the
 * job's own run time, so that it keeps its place among the ready jobs of its
 * priority instead of going behind every job enqueued since.
 */
function retryTime(job: JobRecord, now: Date): Date {
  const delayMs = backoffDelayMs(job.backoff, job.attempts);
  if (delayMs > 0) return new Date(now.getTime() + delayMs);
  return job.runAt.getTime() <= now.getTime() ? job.runAt : now;
}
