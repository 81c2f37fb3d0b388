import { WorkqError } from '../errors.ts';
import { ERROR_HISTORY_LIMITS, type JobError, type JobStatus } from '../jobs.ts';
import { backoffDelayMs } from './backoff.ts';
import type { Clock } from './clock.ts';
import type { FlowControl } from './flow-control.ts';
import type { FlowEndNotices } from './flow-end-notices.ts';
import { checkHoldMs, type SnoozeUntil, snoozeTime } from './handler-scheduling.ts';
import { checkBatch, checkLeaseMs } from './input-checks.ts';
import { KEY_HOLDER_TRIES, keyHolderGone } from './inserts.ts';
import type { JobEventEmitter } from './job-events.ts';
import type { LocalListeners } from './local-listeners.ts';
import { batchSettings, buildNewJob, type EnqueueInput, type EnqueueResult } from './new-job.ts';
import type { ResolvedJobOptions } from './options.ts';
import { toJobStatus, visibleState } from './status.ts';
import type { JobRecord, JobStore, LeaseRef } from './store.ts';
import { toStoredText, toStoredValue } from './stored-value.ts';

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

/** What the operations on leased jobs are handed by the engine that composes them. */
export interface LeasedJobsDeps {
  store: JobStore;
  clock: Clock;
  flow: FlowControl;
  events: JobEventEmitter;
  /** Tells of the jobs a job's death ended through its flow. */
  flowEnds: FlowEndNotices;
  listeners: LocalListeners;
  /** Engine-wide job defaults, for the job `moveTo` enqueues. */
  defaults: Partial<ResolvedJobOptions> | undefined;
}

/** Acks as the store takes them: each result checked and in its stored form. */
export function storedAcks(items: readonly (LeaseRef & { result?: unknown })[]): (LeaseRef & { result: unknown })[] {
  return items.map(({ id, leaseToken, result }) => ({ id, leaseToken, result: toStoredValue(result) }));
}

/** `LEASE_LOST` for job `id`: its lease is expired, or another's. */
export function leaseLost(id: string): WorkqError {
  return new WorkqError(
    'LEASE_LOST',
    `Job ${id} is not held by this lease any more (it expired, the job was cancelled, or another worker claimed it); nothing was changed.`,
  );
}

/**
 * What a worker does with the jobs it holds: complete, release, fail, extend
 * the lease, record progress, replace the payload, move on to a next job.
 * Each is fenced by the lease; `Engine` documents each one.
 */
export class LeasedJobs {
  private readonly store: JobStore;
  private readonly clock: Clock;
  private readonly flow: FlowControl;
  private readonly events: JobEventEmitter;
  private readonly flowEnds: FlowEndNotices;
  private readonly listeners: LocalListeners;
  private readonly defaults: Partial<ResolvedJobOptions> | undefined;

  constructor(deps: LeasedJobsDeps) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.flow = deps.flow;
    this.events = deps.events;
    this.flowEnds = deps.flowEnds;
    this.listeners = deps.listeners;
    this.defaults = deps.defaults;
  }

  async complete(lease: LeaseRef, result?: unknown): Promise<void> {
    const [outcome] = await this.completeMany([{ ...lease, result }]);
    if (!outcome?.ok) throw leaseLost(lease.id);
  }

  async completeMany(items: readonly (LeaseRef & { result?: unknown })[]): Promise<CompleteOutcome[]> {
    checkBatch(items.length, 'completeMany');
    if (items.length === 0) return [];
    const now = this.clock.now();
    return this.completed(items, await this.store.completeJobs(storedAcks(items), now), now);
  }

  /**
   * After the store completed `completedIds` of `items` at `now` (`completeMany`, or a claim that carried them):
   * tells who waits for those jobs, and finds which of the others an earlier ack completed.
   *
   * The store names the jobs it completed, not the leases. A batch merged from several requests can carry two
   * leases of one job: one that expired, and the one that took the job over. Such a job was completed for the
   * lease it keeps (a completed job keeps its token), read back with the others, and only that ack is `ok`.
   */
  async completed(
    items: readonly (LeaseRef & { result?: unknown })[],
    completedIds: readonly string[],
    now: Date,
  ): Promise<CompleteOutcome[]> {
    const done = new Set(completedIds);
    for (const id of done) this.listeners.emitFinished(id, 'completed');
    const shared = idsUnderSeveralLeases(items, done);
    // The jobs this batch alone completed are announced before anything is awaited, so that a subscriber hears of
    // their completion before any later event of theirs. The lists are built only while someone listens.
    if (this.events.listening) {
      this.events.completed(
        items.filter(({ id }) => done.has(id) && !shared.has(id)),
        now,
      );
    }
    const unsure = items.filter(({ id }) => !done.has(id) || shared.has(id));
    const completedBy = unsure.length === 0 ? NO_LEASES : await this.completedLeases(unsure);
    const outcomes = items.map(({ id, leaseToken }) => {
      const byThisLease = completedBy.get(id) === leaseToken;
      const ok = done.has(id) && (!shared.has(id) || byThisLease);
      return { id, ok, repeated: !done.has(id) && byThisLease };
    });
    if (shared.size > 0 && this.events.listening) {
      this.events.completed(
        items.filter(({ id }, index) => shared.has(id) && outcomes[index]?.ok),
        now,
      );
    }
    return outcomes;
  }

  /** The lease token each completed job among those of `leases` keeps, by job id (one store read). */
  private async completedLeases(leases: readonly LeaseRef[]): Promise<Map<string, string | null>> {
    if (leases.length === 0) return new Map();
    const ids = [...new Set(leases.map((lease) => lease.id))];
    const completed = await this.store.listJobs({
      ids,
      states: ['completed'],
      limit: ids.length,
      withoutValues: true,
    });
    return new Map(completed.map((job) => [job.id, job.leaseToken]));
  }

  async release(jobs: readonly (LeaseRef & { name: string })[]): Promise<string[]> {
    checkBatch(jobs.length, 'release');
    if (jobs.length === 0) return [];
    const leases = jobs.map(({ id, leaseToken }) => ({ id, leaseToken }));
    const released = await this.store.releaseJobs(leases, this.clock.now());
    this.events.released(released);
    const releasedIds = new Set(released);
    const names = new Set(jobs.filter((job) => releasedIds.has(job.id)).map((job) => job.name));
    for (const name of names) this.listeners.emitReady(name);
    return released;
  }

  async fail(lease: LeaseRef, failure: AttemptFailure): Promise<JobStatus> {
    const now = this.clock.now();
    // What a failure records, tells and answers reads the job's state, never its payload.
    const job = await this.store.getJob(lease.id, { withoutPayload: true });
    if (!job || !holdsLease(job, lease, now)) throw leaseLost(lease.id);
    const error = recordedError(failure, job.attempts, now);
    const retry = !failure.permanent && job.attempts < job.maxAttempts;
    const retryAt = retry ? retryTime(job, now) : null;
    if (!(await this.store.failJob(lease, { error, retryAt }, now))) throw leaseLost(lease.id);
    this.freed(job.name);
    this.events.failed(job, error, retryAt !== null, now);
    const updated = failedRecord(job, error, retryAt, now);
    if (updated.state === 'dead') this.flowEnds.finished(job, 'dead', now);
    const status = toJobStatus(updated, now);
    // A retry due at once is ready work, like a new job: consumers parked on this server wake for it.
    if (status.state === 'ready') this.listeners.emitReady(updated.name);
    return status;
  }

  /**
   * Ends the held job's attempt without counting it: it waits again until `until` (`ctx.delay`, `ctx.retryAt`),
   * then runs with the attempt number this one had. `job.name` is the holder's word for the job's type, used
   * only to wake claims. `LEASE_LOST` when the lease does not hold, and then nothing changed.
   */
  async snooze(job: LeaseRef & { name: string }, until: SnoozeUntil): Promise<{ runAt: Date }> {
    const now = this.clock.now();
    const runAt = snoozeTime(until, now);
    const lease = { id: job.id, leaseToken: job.leaseToken };
    if (!(await this.store.snoozeJob(lease, runAt, now))) throw leaseLost(job.id);
    this.events.released([job.id]);
    if (runAt.getTime() <= now.getTime()) this.listeners.emitReady(job.name);
    else this.freed(job.name);
    return { runAt };
  }

  /**
   * Holds the held job's type for `holdMs` (`ctx.rateLimited`) and gives the job back, ready in its place, its
   * attempt not counted. The lease is checked first, so a stale one is `LEASE_LOST` with nothing changed; the
   * hold is stored before the job is given back, so no claim on any server leases it, or another job of its
   * type, before the hold ends. Were the lease lost between the check and the give-back, the hold stays (the
   * upstream said to wait all the same) and the call is `LEASE_LOST`.
   */
  async rateLimited(lease: LeaseRef, holdMs: number): Promise<{ heldUntil: Date }> {
    const lengthMs = checkHoldMs(holdMs);
    const now = this.clock.now();
    const job = await this.store.getJob(lease.id, { withoutValues: true });
    if (!job || !holdsLease(job, lease, now)) throw leaseLost(lease.id);
    const settings = await this.flow.change(job.name, { heldUntil: new Date(now.getTime() + lengthMs) });
    const released = await this.store.releaseJobs([{ id: lease.id, leaseToken: lease.leaseToken }], now);
    if (released.length === 0) throw leaseLost(lease.id);
    this.events.released(released);
    // Claims waiting for the type wake, find it held, and wait for the hold's end (`LimitedClaim.nextStartAt`).
    this.listeners.emitReady(job.name);
    return { heldUntil: settings.heldUntil as Date };
  }

  async extend(lease: LeaseRef, leaseMs?: number): Promise<{ leaseExpiresAt: Date }> {
    if (leaseMs !== undefined) checkLeaseMs(leaseMs);
    const now = this.clock.now();
    let lengthMs = leaseMs;
    if (lengthMs === undefined) {
      const job = await this.store.getJob(lease.id, { withoutValues: true });
      if (!job || !holdsLease(job, lease, now)) throw leaseLost(lease.id);
      lengthMs = job.leaseMs;
    }
    const leaseExpiresAt = await this.store.extendLease(lease, new Date(now.getTime() + lengthMs), now);
    if (!leaseExpiresAt) throw leaseLost(lease.id);
    return { leaseExpiresAt };
  }

  async progress(lease: LeaseRef, progress: number): Promise<void> {
    if (typeof progress !== 'number' || !Number.isFinite(progress) || progress < 0 || progress > 100) {
      throw new WorkqError('VALIDATION', `progress must be a number from 0 to 100; got ${String(progress)}.`);
    }
    const now = this.clock.now();
    if (!(await this.store.recordProgress(lease, progress, now))) throw leaseLost(lease.id);
    this.events.progress(lease.id, progress, now);
  }

  async updatePayload(lease: LeaseRef, change: { name: string; version: number; payload: unknown }): Promise<void> {
    if (!Number.isInteger(change.version) || change.version < 1) {
      throw new WorkqError('VALIDATION', `version must be an integer of at least 1; got ${String(change.version)}.`);
    }
    const now = this.clock.now();
    const job = await this.store.getJob(lease.id, { withoutValues: true });
    if (!job || !holdsLease(job, lease, now)) throw leaseLost(lease.id);
    if (job.name !== change.name) {
      throw new WorkqError('VALIDATION', `Job ${lease.id} is a "${job.name}" job, not "${change.name}".`);
    }
    const payload = toStoredValue(change.payload);
    if (!(await this.store.updatePayload(lease, { payload, version: change.version }, now))) throw leaseLost(lease.id);
  }

  async moveTo(lease: LeaseRef, next: EnqueueInput): Promise<EnqueueResult> {
    const now = this.clock.now();
    const { options } = next;
    const refused =
      options?.debounce !== undefined ||
      options?.idempotencyTtlMs !== undefined ||
      options?.idempotencyUntil !== undefined ||
      (next.id ?? options?.id);
    if (refused) {
      throw new WorkqError(
        'VALIDATION',
        'moveTo takes no debounce, idempotencyTtlMs, idempotencyUntil or id: the next job is made in the same step that completes this one. Enqueue it instead, or use an idempotencyKey.',
      );
    }
    const job = buildNewJob(next, now, null, batchSettings(this.defaults, now), lease.id);
    await this.flow.placeInGroups([job]);
    for (let tries = 1; ; tries++) {
      const moved = await this.store.moveJob(lease, job, now);
      if (!moved) throw leaseLost(lease.id);
      if (moved.job !== null) {
        this.listeners.emitFinished(lease.id, 'completed');
        this.events.completed([{ id: lease.id }], now);
        if (moved.created) {
          this.listeners.announce([moved.job]);
          this.events.enqueued([moved.job], now);
        }
        return { id: moved.job.id, created: moved.created, state: visibleState(moved.job, now) };
      }
      if (tries >= KEY_HOLDER_TRIES) throw keyHolderGone(`the next ${job.name} job`);
    }
  }

  freed(name: string): void {
    void this.flow.settingsOf(name).then(
      (settings) => {
        if (settings && (settings.concurrency !== null || settings.groupConcurrency !== null))
          this.listeners.emitReady(name);
      },
      () => undefined,
    );
  }
}

/** `job`, read while its lease held, as `Store.failJob` leaves it: the change the engine asked for applied. */
function failedRecord(job: JobRecord, error: JobError, retryAt: Date | null, now: Date): JobRecord {
  return {
    ...job,
    state: retryAt === null ? 'dead' : 'waiting',
    runAt: retryAt ?? job.runAt,
    error,
    errors: [...job.errors, error].slice(-ERROR_HISTORY_LIMITS.attempts),
    leaseToken: null,
    leaseExpiresAt: null,
    finishedAt: retryAt === null ? now : job.finishedAt,
    updatedAt: now,
  };
}

/**
 * One failed attempt as a worker reports it. `errorName` and `stack` are the handler's (its class and where
 * it threw): the user's data, kept with the job; nothing of the server's own goes in them.
 */
export interface AttemptFailure {
  message: string;
  permanent?: boolean;
  /** The attempt ran past its time limit (`timeoutMs`): recorded with the code `TIMEOUT`. */
  timedOut?: boolean;
  errorName?: string;
  stack?: string;
}

/** The error recorded for `failure`, cut to the bounds of `ERROR_HISTORY_LIMITS`. */
function recordedError(failure: AttemptFailure, attempt: number, at: Date): JobError {
  const error: JobError = { message: toStoredText(String(failure.message).slice(0, 4000)), attempt, at };
  if (failure.errorName) error.name = toStoredText(failure.errorName.slice(0, ERROR_HISTORY_LIMITS.nameChars));
  if (failure.stack) error.stack = toStoredText(failure.stack.slice(0, ERROR_HISTORY_LIMITS.stackChars));
  if (failure.permanent) error.permanent = true;
  if (failure.timedOut) error.code = 'TIMEOUT';
  return error;
}

/** No job read back: every ack of a batch completed its own job. */
const NO_LEASES: ReadonlyMap<string, string | null> = new Map();

/** The ids among `done` that `leases` name with more than one token. */
function idsUnderSeveralLeases(leases: readonly LeaseRef[], done: ReadonlySet<string>): Set<string> {
  const tokens = new Map<string, string>();
  const shared = new Set<string>();
  for (const { id, leaseToken } of leases) {
    if (!done.has(id)) continue;
    if ((tokens.get(id) ?? leaseToken) !== leaseToken) shared.add(id);
    tokens.set(id, leaseToken);
  }
  return shared;
}

/** `lease` holds `job` now: the job is active under that token, and the lease has not run out. */
export function holdsLease(job: JobRecord, lease: LeaseRef, now: Date): boolean {
  return (
    job.state === 'active' &&
    job.leaseToken === lease.leaseToken &&
    job.leaseExpiresAt !== null &&
    job.leaseExpiresAt.getTime() > now.getTime()
  );
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
