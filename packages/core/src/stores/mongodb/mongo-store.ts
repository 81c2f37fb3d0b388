import type { Collection, Db, MongoClient, WriteConcernSettings } from 'mongodb';
import type {
  ChildrenPageQuery,
  ChildState,
  ClaimRequest,
  CountScope,
  Handoff,
  HeldChildrenPage,
  InsertOutcome,
  JobCount,
  JobRead,
  JobRecord,
  LeaseRef,
  LimitedClaim,
  ListFilter,
  NewJob,
  QueueSettings,
  QueueSettingsChange,
  ScheduleRun,
  ScheduleStore,
  SchemaEntry,
  Store,
  StoredSchedule,
  WorkerPresence,
  WorkerRoom,
} from '../../engine/store.ts';
import type { JobError } from '../../jobs.ts';
import type { LeaderElection } from '../../roles/leadership.ts';
import { storeClosed } from '../shared/closed-store.ts';
import { withCallLimit } from './call-limit.ts';
import { cancelJob } from './cancel-job.ts';
import { claimJobs } from './claim-jobs.ts';
import { countJobs } from './count-jobs.ts';
import { DatabaseClock } from './database-clock.ts';
import { debounceJobs } from './debounce-jobs.ts';
import { toWorkqError } from './errors.ts';
import {
  claimJobsUnlessHeld,
  claimLimitedJobs,
  type FlowCollections,
  listQueueSettings,
  type QueueGroupDocument,
  type QueueSettingsDocument,
  updateQueueSettings,
} from './flow-control.ts';
import { pruneGroupTurns } from './group-turns.ts';
import {
  completeHeldJobs,
  extendHeldLease,
  failHeldJob,
  releaseHeldJobs,
  snoozeHeldJob,
  updateHeldJob,
} from './held-jobs.ts';
import type { CollectionNames } from './indexes.ts';
import { insertAndClaimJob } from './insert-and-claim-job.ts';
import { insertFlow, listChildren, listChildStates, listHeldChildren, waitForChildren } from './insert-flow.ts';
import { insertJobs } from './insert-jobs.ts';
import { createMongoLeaderElection, type LeaderDocument } from './leadership.ts';
import { heldBy, typedLeaseToken } from './leases.ts';
import { listJobs } from './list-jobs.ts';
import { moveJob } from './move-job.ts';
import type { ChangeStreamNotifier } from './notifier.ts';
import { promoteJob } from './promote-job.ts';
import { pruneFinishedJobs } from './prune-jobs.ts';
import {
  type JobDocument,
  projectionFor,
  type ScheduleDocument,
  type ScheduleRunDocument,
  type SchemaDocument,
  stringOrNull,
  toJobRecord,
  toJson,
  type WorkerDocument,
} from './records.ts';
import {
  listSchemas,
  listWorkers,
  pruneWorkers,
  recordWorker,
  registerSchema,
  removeSchema,
  touchWorkers,
} from './registries.ts';
import { removeJobByKey } from './remove-job-by-key.ts';
import { requeueExpiredLeases } from './requeue-expired-leases.ts';
import { rerunCompletedJob } from './rerun-completed-job.ts';
import { restoreCancelledJob } from './restore-cancelled-job.ts';
import { retryDeadJobs } from './retry-dead-jobs.ts';
import { mongoSchedules } from './schedules.ts';
import type { FlowTarget } from './settle-parents.ts';

/**
 * Every write is acknowledged by a majority of the replica set and journaled, so
 * an acknowledged enqueue or state change survives the loss of the primary, or
 * fails with `TIMEOUT` after `wtimeoutMS`.
 */
export function durableWrites(wtimeoutMS: number): WriteConcernSettings {
  return { w: 'majority', journal: true, wtimeoutMS };
}

/** What a `MongoStore` runs on; built by `createMongoStore`. */
export interface MongoStoreParts {
  client: MongoClient;
  db: Db;
  names: CollectionNames;
  /** Host list for error messages (never credentials). */
  hosts: string;
  ownsClient: boolean;
  notifier: ChangeStreamNotifier | undefined;
  /** The write concern of every write, the database handle's (see `durableWrites`). */
  writeConcern: WriteConcernSettings;
  /**
   * How long each call to the server may take before it is abandoned, `serverSelectionTimeoutMS` plus
   * `writeTimeoutMS` (the contract is `withCallLimit`'s).
   */
  callLimitMs: number;
}

/** The MongoDB store; see `createMongoStore`. */
export class MongoStore implements Store {
  readonly kind = 'mongodb';
  readonly notifier?: ChangeStreamNotifier;
  readonly leadership: LeaderElection;
  /** A job enqueued for a consumer already waiting is leased to it by its insert (insert-and-claim-job.ts). */
  readonly handoff: Handoff = {
    insertAndClaimJob: (job, claim) =>
      this.run('insertAndClaimJob', async () => insertAndClaimJob(this.flow, job, await this.leaseRequest(claim))),
  };
  private readonly jobs: Collection<JobDocument>;
  private readonly schemas: Collection<SchemaDocument>;
  private readonly workers: Collection<WorkerDocument>;
  private readonly schedules: ScheduleStore;
  private readonly flow: FlowCollections;
  /** Lease times are the database's (see `DatabaseClock`). */
  private readonly clock: DatabaseClock;
  private closing: Promise<void> | null = null;
  /** Where flows' transactions run. */
  private readonly flowTarget: FlowTarget;
  /** Told the names of the parents this store's operations made ready (see `onParentsReady`). */
  private readonly readyListeners = new Set<(names: readonly string[]) => void>();

  constructor(private readonly parts: MongoStoreParts) {
    this.jobs = parts.db.collection<JobDocument>(parts.names.jobs);
    this.clock = new DatabaseClock(parts.db, parts.callLimitMs);
    this.schemas = parts.db.collection<SchemaDocument>(parts.names.schemas);
    this.workers = parts.db.collection<WorkerDocument>(parts.names.workers);
    this.schedules = mongoSchedules(
      parts.db.collection<ScheduleDocument>(parts.names.schedules),
      parts.db.collection<ScheduleRunDocument>(parts.names.scheduleRuns),
      parts.callLimitMs,
    );
    this.flow = {
      client: parts.client,
      writeConcern: parts.writeConcern,
      hosts: parts.hosts,
      limitMs: parts.callLimitMs,
      jobs: this.jobs,
      settings: parts.db.collection<QueueSettingsDocument>(parts.names.queueSettings),
      groups: parts.db.collection<QueueGroupDocument>(parts.names.queueGroups),
    };
    this.leadership = createMongoLeaderElection(
      parts.db.collection<LeaderDocument>(parts.names.leaders),
      parts.hosts,
      parts.callLimitMs,
    );
    if (parts.notifier) this.notifier = parts.notifier;
    this.flowTarget = {
      client: parts.client,
      jobs: this.jobs,
      writeConcern: parts.writeConcern,
      hosts: parts.hosts,
      limitMs: parts.callLimitMs,
    };
  }

  insertJobs(jobs: readonly NewJob[]) {
    return this.run('insert', () =>
      jobs.length === 0 ? Promise.resolve([]) : insertJobs(this.jobs, jobs, this.parts.callLimitMs),
    );
  }

  debounceJobs(jobs: readonly NewJob[]) {
    return this.run('debounce', () => debounceJobs(this.jobs, jobs, this.parts.callLimitMs));
  }

  claimJobs(request: ClaimRequest) {
    return this.run('claim', async () =>
      claimJobs(this.jobs, await this.leaseRequest(request), this.parts.callLimitMs),
    );
  }

  claimJobsUnlessHeld(request: ClaimRequest) {
    return this.run('claim', async () => claimJobsUnlessHeld(this.flow, await this.leaseRequest(request)));
  }

  listQueueSettings(name?: string): Promise<QueueSettings[]> {
    return this.run('listQueueSettings', () => listQueueSettings(this.flow.settings, name, this.parts.callLimitMs));
  }

  updateQueueSettings(name: string, change: QueueSettingsChange, now: Date): Promise<QueueSettings | null> {
    return this.run('updateQueueSettings', async () => {
      // A hold is compared with the claims' `now`, which is the database's time (`leaseRequest`).
      const held = change.heldUntil == null ? change : { ...change, heldUntil: await this.clock.at(change.heldUntil) };
      return updateQueueSettings(this.flow.settings, name, held, now, this.parts.callLimitMs);
    });
  }

  claimLimitedJobs(request: ClaimRequest): Promise<LimitedClaim> {
    return this.run('claim', async () => claimLimitedJobs(this.flow, await this.leaseRequest(request)));
  }

  completeJobs(items: readonly (LeaseRef & { result: unknown })[], now: Date): Promise<string[]> {
    return this.run('complete', async () => {
      const { ids, ready } = await completeHeldJobs(this.flowTarget, items, await this.clock.at(now));
      this.announceReady(ready);
      return ids;
    });
  }

  releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]> {
    return this.run('release', async () => releaseHeldJobs(this.flowTarget, leases, await this.clock.at(now)));
  }

  failJob(lease: LeaseRef, outcome: { error: JobError; retryAt: Date | null }, now: Date): Promise<boolean> {
    return this.run('fail', async () => {
      const toDatabase = await this.clock.shift();
      const retryAt = outcome.retryAt === null ? null : toDatabase(outcome.retryAt);
      const { held, ready } = await failHeldJob(this.flowTarget, lease, { ...outcome, retryAt }, toDatabase(now));
      this.announceReady(ready);
      return held;
    });
  }

  snoozeJob(lease: LeaseRef, runAt: Date, now: Date): Promise<boolean> {
    return this.run('snooze', async () => {
      const toDatabase = await this.clock.shift();
      return snoozeHeldJob(this.flowTarget, lease, toDatabase(runAt), toDatabase(now));
    });
  }

  extendLease(lease: LeaseRef, leaseExpiresAt: Date, now: Date): Promise<Date | null> {
    return this.run('extend', async () => {
      const toDatabase = await this.clock.shift();
      const at = toDatabase(now);
      const stored = await extendHeldLease(this.flowTarget, lease, toDatabase(leaseExpiresAt), at);
      // The stored expiry, moved back from the database's time to the engine's.
      return stored ? new Date(stored.getTime() - (at.getTime() - now.getTime())) : null;
    });
  }

  recordProgress(lease: LeaseRef, progress: number, now: Date): Promise<boolean> {
    return this.updateHeld('progress', lease, now, { progress: Number(progress) });
  }

  updatePayload(lease: LeaseRef, change: { payload: unknown; version: number }, now: Date): Promise<boolean> {
    return this.updateHeld('updatePayload', lease, now, { payload: toJson(change.payload), version: change.version });
  }

  /** One transaction (see `moveJob` in move-job.ts). */
  moveJob(lease: LeaseRef, next: NewJob, now: Date): Promise<InsertOutcome | null> {
    return this.run('moveTo', async () => {
      const at = await this.clock.at(now);
      const held = heldBy(lease, at);
      if (!held) return null;
      const ready: string[] = [];
      const moved = await moveJob(
        { ...this.parts, jobs: this.jobs, limitMs: this.parts.callLimitMs },
        held,
        next,
        at,
        ready,
      );
      this.announceReady(ready);
      return moved;
    });
  }

  cancelJob(id: string, now: Date) {
    return this.run('cancel', async () => {
      const { job, ready } = await cancelJob(this.flowTarget, id, now);
      this.announceReady(ready);
      return job;
    });
  }

  promoteJob(id: string, now: Date) {
    return this.run('promote', () => promoteJob(this.jobs, id, now, this.parts.callLimitMs));
  }

  rerunCompletedJob(id: string, now: Date) {
    return this.run('rerun', () => rerunCompletedJob(this.jobs, id, now, this.parts.callLimitMs));
  }

  restoreCancelledJob(id: string, now: Date) {
    return this.run('restore', () => restoreCancelledJob(this.jobs, id, now, this.parts.callLimitMs));
  }

  removeJobByKey(name: string, key: string) {
    return this.run('removeByKey', () => removeJobByKey(this.jobs, name, key, this.parts.callLimitMs));
  }

  insertFlow(jobs: readonly NewJob[]): Promise<InsertOutcome> {
    return this.run('insertFlow', () => insertFlow(this.flowTarget, jobs));
  }

  waitForChildren(lease: LeaseRef, children: readonly NewJob[], now: Date): Promise<boolean> {
    return this.run('waitForChildren', async () => {
      const at = await this.clock.at(now);
      const held = heldBy(lease, at);
      return held ? waitForChildren(this.flowTarget, lease, held, children, at) : false;
    });
  }

  listChildren(parentId: string, page: ChildrenPageQuery): Promise<JobRecord[]> {
    return this.run('listChildren', () => listChildren(this.jobs, parentId, page, this.parts.callLimitMs));
  }

  listChildStates(parentId: string, page: { afterId?: string; limit: number }): Promise<ChildState[]> {
    return this.run('listChildStates', () => listChildStates(this.jobs, parentId, page, this.parts.callLimitMs));
  }

  listHeldChildren(lease: LeaseRef, page: ChildrenPageQuery, now: Date): Promise<HeldChildrenPage | null> {
    return this.run('listHeldChildren', async () => {
      const at = await this.clock.at(now);
      return listHeldChildren(this.jobs, heldBy(lease, at), page, this.parts.callLimitMs);
    });
  }

  onParentsReady(listener: (names: readonly string[]) => void): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  ping(): Promise<void> {
    return this.run('ping', async () => {
      if (this.closing) throw storeClosed(this.kind);
      await this.call((signal) => this.parts.db.command({ ping: 1 }, { signal }));
    });
  }

  getJob(id: string, read: JobRead = {}) {
    return this.run('get', async () => {
      const jobId = stringOrNull(id);
      const projection = projectionFor(read);
      const doc =
        jobId === null ? null : await this.call((signal) => this.jobs.findOne({ _id: jobId }, { projection, signal }));
      return doc ? toJobRecord(doc) : null;
    });
  }

  listJobs(filter: ListFilter) {
    return this.run('list', () => listJobs(this.jobs, filter, this.parts.callLimitMs));
  }

  countJobs(now: Date, scope: CountScope = 'all'): Promise<JobCount[]> {
    return this.run('count', () => countJobs(this.jobs, now, scope, this.parts.callLimitMs));
  }

  retryDeadJobs(target: { name?: string; ids?: readonly string[] }, now: Date) {
    return this.run('retryDead', async () => {
      const { retried, ready } = await retryDeadJobs(this.flowTarget, target, now);
      this.announceReady(ready);
      return retried;
    });
  }

  requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>) {
    return this.run('requeueExpired', async () => {
      const ready: string[] = [];
      const swept = await requeueExpiredLeases(this.flowTarget, await this.clock.at(now), error, ready);
      this.announceReady(ready);
      return swept;
    });
  }

  pruneJobs(finishedBefore: Date, limit: number, now: Date) {
    return this.run('prune', async () => {
      const max = Math.floor(limit);
      if (!(max > 0)) return 0;
      // Group turns are bounded here too: pruning is the store's maintenance (see `pruneGroupTurns`).
      await pruneGroupTurns(this.flow.groups, this.parts.callLimitMs);
      const at = await this.clock.at(now);
      return pruneFinishedJobs(this.jobs, this.parts.callLimitMs, { now: at, finishedBefore }, max);
    });
  }

  registerSchema(entry: SchemaEntry) {
    return this.run('registerSchema', () => registerSchema(this.schemas, entry, this.parts.callLimitMs));
  }

  listSchemas(name?: string) {
    return this.run('listSchemas', () => listSchemas(this.schemas, name, this.parts.callLimitMs));
  }

  removeSchema(name: string, version: number) {
    return this.run('removeSchema', () => removeSchema(this.schemas, name, version, this.parts.callLimitMs));
  }

  recordWorker(worker: WorkerPresence, room: WorkerRoom) {
    return this.run('recordWorker', () => recordWorker(this.workers, worker, room, this.parts.callLimitMs));
  }

  pruneWorkers(seenBefore: Date) {
    return this.run('pruneWorkers', () => pruneWorkers(this.workers, seenBefore, this.parts.callLimitMs));
  }

  listWorkers(seenSince: Date) {
    return this.run('listWorkers', () => listWorkers(this.workers, seenSince, this.parts.callLimitMs));
  }

  touchWorkers(ids: readonly string[], seenAt: Date) {
    return this.run('touchWorkers', () => touchWorkers(this.workers, ids, seenAt, this.parts.callLimitMs));
  }

  upsertSchedule(schedule: StoredSchedule) {
    return this.run('upsertSchedule', () => this.schedules.upsertSchedule(schedule));
  }

  removeSchedule(key: string) {
    return this.run('removeSchedule', () => this.schedules.removeSchedule(key));
  }

  listSchedules() {
    return this.run('listSchedules', () => this.schedules.listSchedules());
  }

  recordScheduleRun(run: ScheduleRun) {
    return this.run('recordScheduleRun', () => this.schedules.recordScheduleRun(run));
  }

  listScheduleRuns(keys: readonly string[]) {
    return this.run('listScheduleRuns', () => this.schedules.listScheduleRuns(keys));
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.notifier?.close();
      if (this.parts.ownsClient) await this.parts.client.close();
    })();
    return this.closing;
  }

  /** Tells the listeners (`onParentsReady`) the names of parents an operation made ready, once it committed. */
  private announceReady(names: readonly string[]): void {
    if (names.length === 0) return;
    for (const listener of this.readyListeners) listener(names);
  }

  /** A claim as this store runs it: on the database's clock, under a token naming the job type (`typedLeaseToken`). */
  private async leaseRequest(request: ClaimRequest): Promise<ClaimRequest> {
    return { ...request, leaseToken: typedLeaseToken(request), now: await this.clock.at(request.now) };
  }

  /** A fenced update of one held job's `fields`, on the database's clock; resolves to whether the lease held. */
  private updateHeld(operation: string, lease: LeaseRef, now: Date, fields: Partial<JobDocument>): Promise<boolean> {
    return this.run(operation, async () => updateHeldJob(this.flowTarget, lease, fields, await this.clock.at(now)));
  }

  /** One call to the server, abandoned after the store's call limit (see `withCallLimit`). */
  private call<T>(call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return withCallLimit(this.parts.callLimitMs, call);
  }

  private async run<T>(operation: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toWorkqError(error, this.parts.hosts, operation);
    }
  }
}
