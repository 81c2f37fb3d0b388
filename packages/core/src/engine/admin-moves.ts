import { WorkqError } from '../errors.ts';
import { isFinishedState } from '../jobs.ts';
import type { Clock } from './clock.ts';
import type { FlowControl } from './flow-control.ts';
import type { Flows } from './flows.ts';
import { checkBatch, checkName } from './input-checks.ts';
import { insertDistinct } from './inserts.ts';
import type { JobEventEmitter } from './job-events.ts';
import type { LocalListeners } from './local-listeners.ts';
import { batchSettings, buildNewJob, type EnqueueResult } from './new-job.ts';
import { checkIdempotencyKey, type ResolvedJobOptions } from './options.ts';
import { visibleState } from './status.ts';
import type { Store } from './store.ts';
import type { JobRecord } from './store-records.ts';
import { fromStoredValue } from './stored-value.ts';

/** What an operator's moves are handed by the engine that composes them. */
export interface AdminMovesDeps {
  store: Store;
  clock: Clock;
  flow: FlowControl;
  flows: Flows;
  events: JobEventEmitter;
  listeners: LocalListeners;
  /** Engine-wide job defaults. */
  defaults: Partial<ResolvedJobOptions> | undefined;
}

/**
 * An operator's moves on jobs that exist (`admin.*`): retry dead jobs, run a scheduled one now, rerun a finished
 * one in place, restore a cancelled one, remove a waiting one by its key, replay a finished one as a new job.
 * Each change a move makes is one atomic store step; a move that changed nothing says why (`refusedMove`).
 */
export class AdminMoves {
  constructor(private readonly deps: AdminMovesDeps) {}

  /** Re-enqueues dead jobs (by id, or all of one type) with fresh attempts. Resolves to how many. */
  async retryDead(target: { name?: string; ids?: readonly string[] }): Promise<number> {
    if (target.ids) checkBatch(target.ids.length, 'retryDead');
    if (!target.name && !target.ids) throw new WorkqError('VALIDATION', 'retryDead needs a job name or ids.');
    const count = await this.deps.store.retryDeadJobs(target, this.deps.clock.now());
    if (count > 0 && target.name) this.deps.listeners.emitReady(target.name);
    if (count > 0 && target.ids) this.deps.listeners.emitReady('*');
    return count;
  }

  /**
   * Runs a scheduled job now (`admin.promote`): a delayed job, or one waiting out a retry's backoff, becomes
   * ready at once, keeping its id and attempts. Resolves to `false` when the job is not scheduled (it
   * started, finished or is due already); `NOT_FOUND` when there is no such job.
   */
  async promote(id: string): Promise<boolean> {
    const promoted = await this.deps.store.promoteJob(id, this.deps.clock.now());
    if (promoted) {
      this.deps.listeners.emitReady(promoted.name);
      return true;
    }
    if (!(await this.deps.store.getJob(id, { withoutValues: true }))) {
      throw new WorkqError('NOT_FOUND', `No job with id ${id} to run now.`);
    }
    return false;
  }

  /**
   * Runs a finished job again in place (`admin.retry`), keeping its id: a dead job as `retryDead` retries it,
   * or a completed job outside flows with its result and error cleared; either waits again, due now, with
   * fresh attempts. Resolves to `false` when the job is live (waiting, scheduled or running: nothing to rerun);
   * `CONFLICT` for a cancelled job or a completed one in a flow (see `refusedMove`); `NOT_FOUND` for no job.
   */
  async retry(id: string): Promise<boolean> {
    const now = this.deps.clock.now();
    if ((await this.deps.store.retryDeadJobs({ ids: [id] }, now)) > 0) {
      this.deps.listeners.emitReady('*');
      return true;
    }
    const rerun = await this.deps.store.rerunCompletedJob(id, now);
    if (rerun) {
      this.deps.listeners.emitReady(rerun.name);
      return true;
    }
    return refusedMove(await this.deps.store.getJob(id, { withoutValues: true }), id, 'retry');
  }

  /**
   * Puts a cancelled job that never started back to waiting (`admin.restore`), at its own run time: ready, or
   * scheduled when that is still ahead. Resolves to `false` when the job is live; `CONFLICT` for a job
   * cancelled after it started, one in a flow, or one that completed or died (see `refusedMove`);
   * `NOT_FOUND` for no job.
   */
  async restore(id: string): Promise<boolean> {
    const restored = await this.deps.store.restoreCancelledJob(id, this.deps.clock.now());
    if (restored) {
      this.deps.listeners.emitReady(restored.name);
      return true;
    }
    return refusedMove(await this.deps.store.getJob(id, { withoutValues: true }), id, 'restore');
  }

  /**
   * Deletes the job of type `name` holding idempotency key `key` while it waits (ready or scheduled, a retry's
   * backoff included) and is outside flows (`admin.removeByKey`); the key is free once it resolves. Resolves to
   * `false` when no such job waits: none holds the key, or it is running, finished or in a flow.
   */
  async removeByKey(name: string, key: string): Promise<boolean> {
    const checked = checkIdempotencyKey(key) as string;
    return (await this.deps.store.removeJobByKey(checkName(name), checked)) !== null;
  }

  /**
   * Enqueues a finished job again, as a new job with the same payload (a parent with its flow, see
   * `Flows.replay`). Resolves to the new job's id.
   */
  async replay(id: string): Promise<EnqueueResult> {
    const job = await this.deps.store.getJob(id);
    if (!job) throw new WorkqError('NOT_FOUND', `No job with id ${id} to replay.`);
    if (!isFinishedState(job.state)) {
      throw new WorkqError(
        'CONFLICT',
        `Job ${id} has not finished (state ${job.state}); only finished jobs can be replayed.`,
      );
    }
    if ((job.childCount ?? 0) > 0) return this.deps.flows.replay(job);
    const now = this.deps.clock.now();
    const { priority, maxAttempts, backoff, leaseMs, order } = job;
    const retention = { completedMs: job.retainCompletedMs ?? undefined, deadMs: job.retainDeadMs ?? undefined };
    const timeoutMs = job.timeoutMs ?? undefined;
    const input = { name: job.name, version: job.version, payload: fromStoredValue(job.payload) };
    // The replay keeps the trace context of the job it replays: its processing links to the original producer.
    const traceContext = job.traceContext ?? undefined;
    const group = job.group || undefined;
    const options = { priority, maxAttempts, backoff, leaseMs, timeoutMs, order, traceContext, group, retention };
    const replay = buildNewJob({ ...input, options }, now, id, batchSettings(this.deps.defaults, now));
    await this.deps.flow.placeInGroups([replay]);
    const [outcome] = await insertDistinct(this.deps.store, [replay]);
    if (!outcome) throw new WorkqError('UNAVAILABLE', 'The store returned no outcome for the replayed job.');
    this.deps.listeners.announce([outcome.job]);
    this.deps.events.enqueued([outcome.job], now);
    return { id: outcome.job.id, created: true, state: visibleState(outcome.job, now) };
  }
}

/** An operator's move on one job that changed nothing: `admin.retry` or `admin.restore`. */
export type RefusedMove = 'retry' | 'restore';

const inFlow = (job: JobRecord) => job.parentId != null || (job.childCount ?? 0) > 0;

/**
 * Why `move` left `job` (read after the move's atomic step changed nothing) as it is: `NOT_FOUND` when there
 * is no such job; `CONFLICT`, saying what to do instead, when the move can never apply to the job as it is
 * (finished in a state the move does not start from, or in a flow); `false` when the job is live (waiting,
 * scheduled, running or waiting for its children), so there is nothing to do, as a second operator finds
 * after the first one's move.
 */
export function refusedMove(job: JobRecord | null, id: string, move: RefusedMove): false {
  if (!job)
    throw new WorkqError('NOT_FOUND', `No job with id ${id} to ${move} (it may have been pruned from history).`);
  const replay = 'admin.replay enqueues it again as a new job';
  if (move === 'retry' && job.state === 'cancelled') {
    throw new WorkqError(
      'CONFLICT',
      `Job ${id} was cancelled: admin.restore puts it back if it never started, or ${replay}.`,
    );
  }
  if (move === 'restore' && (job.state === 'completed' || job.state === 'dead')) {
    throw new WorkqError('CONFLICT', `Job ${id} is ${job.state}, not cancelled: admin.retry runs it again in place.`);
  }
  const startsFrom = move === 'retry' ? job.state === 'completed' || job.state === 'dead' : job.state === 'cancelled';
  if (startsFrom && inFlow(job)) {
    throw new WorkqError('CONFLICT', `Job ${id} is part of a flow, which ${move} would break: ${replay}.`);
  }
  if (move === 'restore' && job.state === 'cancelled') {
    throw new WorkqError(
      'CONFLICT',
      `Job ${id} was cancelled after it started (${job.attempts} attempt${job.attempts === 1 ? '' : 's'}), so it cannot go back to waiting: ${replay}.`,
    );
  }
  return false;
}
