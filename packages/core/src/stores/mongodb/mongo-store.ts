import type { Collection, Db, Filter, MongoClient, UpdateFilter, WriteConcernSettings } from 'mongodb';
import type {
  ClaimRequest,
  InsertOutcome,
  JobCount,
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
  StoreCapabilities,
  StoredSchedule,
  WorkerPresence,
  WorkerRoom,
} from '../../engine/store.ts';
import { FINISHED_STATES, type JobError } from '../../jobs.ts';
import type { LeaderElection } from '../../roles/leadership.ts';
import { storeClosed } from '../shared/closed-store.ts';
import { NOT_STARTED, notStartedState } from '../shared/not-started.ts';
import { claimJobs } from './claim-jobs.ts';
import { countJobs } from './count-jobs.ts';
import { debounceJobs } from './debounce-jobs.ts';
import {
  appendedErrors,
  cleanError,
  type JobDocument,
  literal,
  orderKeyExpression,
  type ScheduleDocument,
  type ScheduleRunDocument,
  type SchemaDocument,
  stringOrNull,
  toJobRecord,
  toJson,
  type WorkerDocument,
} from './documents.ts';
import { toWorkqError } from './errors.ts';
import {
  claimLimitedJobs,
  type FlowCollections,
  listQueueSettings,
  type QueueGroupDocument,
  type QueueSettingsDocument,
  updateQueueSettings,
} from './flow-control.ts';
import type { CollectionNames } from './indexes.ts';
import { insertJobs } from './insert-jobs.ts';
import { createMongoLeaderElection, type LeaderDocument } from './leadership.ts';
import { ENDED_LEASE, heldBy } from './leases.ts';
import { listJobs } from './list-jobs.ts';
import { moveJob } from './move-job.ts';
import type { ChangeStreamNotifier } from './notifier.ts';
import {
  listSchemas,
  listWorkers,
  pruneWorkers,
  recordWorker,
  registerSchema,
  removeSchema,
  touchWorkers,
} from './registries.ts';
import { requeueExpiredLeases } from './requeue-expired-leases.ts';
import { mongoSchedules } from './schedules.ts';

/**
 * Every write is acknowledged by a majority of the replica set and journaled
 * (DESIGN guarantee 3), or fails with `TIMEOUT` after `wtimeoutMS`.
 */
export function durableWrites(wtimeoutMS: number): WriteConcernSettings {
  return { w: 'majority', journal: true, wtimeoutMS };
}

const LIVE_STATES = [...NOT_STARTED, 'active'] as const;

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
}

/** The MongoDB store; see `createMongoStore`. */
export class MongoStore implements Store {
  readonly kind = 'mongodb';
  readonly capabilities: StoreCapabilities;
  readonly notifier?: ChangeStreamNotifier;
  readonly leadership: LeaderElection;
  private readonly jobs: Collection<JobDocument>;
  private readonly schemas: Collection<SchemaDocument>;
  private readonly workers: Collection<WorkerDocument>;
  private readonly schedules: ScheduleStore;
  private readonly flow: FlowCollections;
  private closing: Promise<void> | null = null;

  constructor(private readonly parts: MongoStoreParts) {
    this.jobs = parts.db.collection<JobDocument>(parts.names.jobs);
    this.schemas = parts.db.collection<SchemaDocument>(parts.names.schemas);
    this.workers = parts.db.collection<WorkerDocument>(parts.names.workers);
    this.schedules = mongoSchedules(
      parts.db.collection<ScheduleDocument>(parts.names.schedules),
      parts.db.collection<ScheduleRunDocument>(parts.names.scheduleRuns),
    );
    this.flow = {
      client: parts.client,
      writeConcern: parts.writeConcern,
      hosts: parts.hosts,
      jobs: this.jobs,
      settings: parts.db.collection<QueueSettingsDocument>(parts.names.queueSettings),
      groups: parts.db.collection<QueueGroupDocument>(parts.names.queueGroups),
    };
    this.capabilities = {
      notify: parts.notifier !== undefined,
      leadership: true,
      insertAndClaim: false,
      completeAndClaim: false,
    };
    this.leadership = createMongoLeaderElection(parts.db.collection<LeaderDocument>(parts.names.leaders), parts.hosts);
    if (parts.notifier) this.notifier = parts.notifier;
  }

  insertJobs(jobs: readonly NewJob[]) {
    return this.run('insert', () => (jobs.length === 0 ? Promise.resolve([]) : insertJobs(this.jobs, jobs)));
  }

  debounceJobs(jobs: readonly NewJob[]) {
    return this.run('debounce', () => debounceJobs(this.jobs, jobs));
  }

  claimJobs(request: ClaimRequest) {
    return this.run('claim', () => claimJobs(this.jobs, request));
  }

  listQueueSettings(name?: string): Promise<QueueSettings[]> {
    return this.run('listQueueSettings', () => listQueueSettings(this.flow.settings, name));
  }

  updateQueueSettings(name: string, change: QueueSettingsChange, now: Date): Promise<QueueSettings> {
    return this.run('updateQueueSettings', () => updateQueueSettings(this.flow.settings, name, change, now));
  }

  claimLimitedJobs(request: ClaimRequest): Promise<LimitedClaim> {
    return this.run('claim', () => claimLimitedJobs(this.flow, request));
  }

  completeJobs(items: readonly (LeaseRef & { result: unknown })[], now: Date): Promise<string[]> {
    return this.run('complete', () =>
      this.updateEachHeld(items, now, (item) => ({
        // The token stays, so a repeat of this ack is recognised (see `JobRecord.leaseToken`).
        $set: {
          leaseExpiresAt: null,
          state: 'completed',
          result: toJson(item.result),
          finishedAt: now,
          updatedAt: now,
        },
      })),
    );
  }

  releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]> {
    return this.run('release', () =>
      this.updateEachHeld(leases, now, () => ({
        $set: { ...ENDED_LEASE, state: 'waiting', workerId: null, updatedAt: now },
        $inc: { attempts: -1 },
      })),
    );
  }

  /** Applies `update` to each job its lease still holds, side by side; resolves to the ids it changed. */
  private async updateEachHeld<L extends LeaseRef>(
    leases: readonly L[],
    now: Date,
    update: (lease: L) => UpdateFilter<JobDocument>,
  ): Promise<string[]> {
    const changed = await Promise.all(
      leases.map(async (lease) => {
        const filter = heldBy(lease, now);
        if (!filter) return null;
        const { modifiedCount } = await this.jobs.updateOne(filter, update(lease));
        return modifiedCount === 1 ? lease.id : null;
      }),
    );
    return changed.filter((id): id is string => id !== null);
  }

  failJob(lease: LeaseRef, outcome: { error: JobError; retryAt: Date | null }, now: Date): Promise<boolean> {
    const error = literal(cleanError(outcome.error));
    const { retryAt } = outcome;
    const ending =
      retryAt === null
        ? { state: 'dead', finishedAt: now }
        : {
            state: notStartedState(retryAt, now),
            runAt: retryAt,
            orderKey: orderKeyExpression(retryAt),
            workerId: null,
          };
    return this.run('fail', async () => {
      const filter = heldBy(lease, now);
      if (!filter) return false;
      const { matchedCount } = await this.jobs.updateOne(filter, [
        { $set: { ...ENDED_LEASE, ...ending, error, errors: appendedErrors(error), updatedAt: now } },
      ]);
      return matchedCount === 1;
    });
  }

  extendLease(lease: LeaseRef, leaseExpiresAt: Date, now: Date): Promise<boolean> {
    return this.updateHeld('extend', lease, now, { leaseExpiresAt });
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
      const held = heldBy(lease, now);
      if (!held) return null;
      return moveJob({ ...this.parts, jobs: this.jobs }, held, next, now);
    });
  }

  cancelJob(id: string, now: Date) {
    return this.run('cancel', async () => {
      const jobId = stringOrNull(id);
      if (jobId === null) return null;
      const doc = await this.jobs.findOneAndUpdate(
        { _id: jobId, state: { $in: LIVE_STATES } },
        { $set: { ...ENDED_LEASE, state: 'cancelled', finishedAt: now, updatedAt: now } },
        { returnDocument: 'after' },
      );
      return doc ? toJobRecord(doc) : null;
    });
  }

  ping(): Promise<void> {
    return this.run('ping', async () => {
      if (this.closing) throw storeClosed(this.kind);
      await this.parts.db.command({ ping: 1 });
    });
  }

  getJob(id: string) {
    return this.run('get', async () => {
      const jobId = stringOrNull(id);
      const doc = jobId === null ? null : await this.jobs.findOne({ _id: jobId });
      return doc ? toJobRecord(doc) : null;
    });
  }

  listJobs(filter: ListFilter) {
    return this.run('list', () => listJobs(this.jobs, filter));
  }

  countJobs(now: Date): Promise<JobCount[]> {
    return this.run('count', () => countJobs(this.jobs, now));
  }

  retryDeadJobs(target: { name?: string; ids?: readonly string[] }, now: Date) {
    return this.run('retryDead', async () => {
      const filter: Filter<JobDocument> = { state: 'dead' };
      if (target.name !== undefined) filter.name = stringOrNull(target.name) ?? { $in: [] };
      if (target.ids !== undefined) filter._id = { $in: target.ids.filter((id) => typeof id === 'string') };
      const { modifiedCount } = await this.jobs.updateMany(filter, [
        {
          $set: {
            ...ENDED_LEASE,
            state: 'waiting',
            runAt: now,
            orderKey: orderKeyExpression(now),
            attempts: 0,
            workerId: null,
            finishedAt: null,
            updatedAt: now,
          },
        },
      ]);
      return modifiedCount;
    });
  }

  requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>) {
    return this.run('requeueExpired', () => requeueExpiredLeases(this.jobs, now, error));
  }

  pruneJobs(finishedBefore: Date, limit: number) {
    return this.run('prune', async () => {
      const max = Math.floor(limit);
      if (!(max > 0)) return 0;
      const old = { state: { $in: [...FINISHED_STATES] }, finishedAt: { $lt: finishedBefore } };
      const ids = await this.jobs.find(old, { limit: max, projection: { _id: 1 } }).toArray();
      if (ids.length === 0) return 0;
      const { deletedCount } = await this.jobs.deleteMany({ ...old, _id: { $in: ids.map((doc) => doc._id) } });
      return deletedCount;
    });
  }

  registerSchema(entry: SchemaEntry) {
    return this.run('registerSchema', () => registerSchema(this.schemas, entry));
  }

  listSchemas(name?: string) {
    return this.run('listSchemas', () => listSchemas(this.schemas, name));
  }

  removeSchema(name: string, version: number) {
    return this.run('removeSchema', () => removeSchema(this.schemas, name, version));
  }

  recordWorker(worker: WorkerPresence, room: WorkerRoom) {
    return this.run('recordWorker', () => recordWorker(this.workers, worker, room));
  }

  pruneWorkers(seenBefore: Date) {
    return this.run('pruneWorkers', () => pruneWorkers(this.workers, seenBefore));
  }

  listWorkers(seenSince: Date) {
    return this.run('listWorkers', () => listWorkers(this.workers, seenSince));
  }

  touchWorkers(ids: readonly string[], seenAt: Date) {
    return this.run('touchWorkers', () => touchWorkers(this.workers, ids, seenAt));
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

  /** A fenced single-document update; resolves to whether the lease held (the document matched). */
  private updateHeld(operation: string, lease: LeaseRef, now: Date, fields: Partial<JobDocument>): Promise<boolean> {
    return this.run(operation, async () => {
      const filter = heldBy(lease, now);
      if (!filter) return false;
      const { matchedCount } = await this.jobs.updateOne(filter, { $set: { ...fields, updatedAt: now } });
      return matchedCount === 1;
    });
  }

  private async run<T>(operation: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toWorkqError(error, this.parts.hosts, operation);
    }
  }
}
