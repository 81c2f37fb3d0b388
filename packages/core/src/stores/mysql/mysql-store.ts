import type { Pool, PoolConnection } from 'mysql2/promise';
import type {
  ChildrenPageQuery,
  ChildState,
  ClaimedRecord,
  ClaimRequest,
  ClosableNotifier,
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
  SweptLease,
  WorkerPresence,
  WorkerRoom,
} from '../../engine/store.ts';
import type { JobError } from '../../jobs.ts';
import type { LeaderElection } from '../../roles/leadership.ts';
import { storeClosed } from '../shared/closed-store.ts';
import { inTransaction, onPinned, selectRows } from './connection.ts';
import { withDeadlockRetry } from './errors.ts';
import { listQueueSettings, StrictOrderBroken, updateQueueSettings } from './flow-control.ts';
import { selectJobsByIds } from './job-queries.ts';
import { createMysqlLeaderElection } from './leadership.ts';
import { listJobs } from './list-jobs.ts';
import { writeJson } from './records.ts';
import {
  listSchemas,
  listWorkers,
  pruneWorkers,
  recordWorker,
  registerSchema,
  removeSchema,
  touchWorkers,
} from './registries.ts';
import { mysqlSchedules } from './schedules.ts';
import { cancelJob } from './sql/cancel-job.ts';
import { claimJobs, claimJobsUnlessHeld } from './sql/claim-jobs.ts';
import { claimLimitedJobs } from './sql/claim-limited-jobs.ts';
import { completeHeldJobs } from './sql/complete-held-jobs.ts';
import { completeJobs } from './sql/complete-jobs.ts';
import { countJobs } from './sql/count-jobs.ts';
import { debounceJob } from './sql/debounce-job.ts';
import { extendLease } from './sql/extend-lease.ts';
import { failHeldChild, failJob } from './sql/fail-job.ts';
import { insertAndClaimJob } from './sql/insert-and-claim-job.ts';
import { insertFlow, insertFlowAtOnce } from './sql/insert-flow.ts';
import { insertJobs } from './sql/insert-jobs.ts';
import { listChildren, listChildStates } from './sql/list-children.ts';
import { listHeldChildren } from './sql/list-held-children.ts';
import { KeyHolderVanished, moveJob } from './sql/move-job.ts';
import { promoteJob } from './sql/promote-job.ts';
import { pruneJobs } from './sql/prune-jobs.ts';
import { releaseJobs } from './sql/release-jobs.ts';
import { removeJobByKey } from './sql/remove-job-by-key.ts';
import { hasExpiredLease, requeueExpiredLeases } from './sql/requeue-expired-leases.ts';
import { rerunCompletedJob } from './sql/rerun-completed-job.ts';
import { restoreCancelledJob } from './sql/restore-cancelled-job.ts';
import { retryDeadJobs } from './sql/retry-dead-jobs.ts';
import { snoozeJob } from './sql/snooze-job.ts';
import { updateHeldJob } from './sql/update-held-job.ts';
import { waitForChildren } from './sql/wait-for-children.ts';
import type { Tables } from './tables.ts';

/** How a `MysqlStore` reaches its database; built once by `createMysqlStore`. */
export interface MysqlStoreParts {
  pool: Pool;
  tables: Tables;
  /** `host:port`, for error messages. */
  target: string;
  /** Whether `close()` ends the pool (false when the caller passed in its own). */
  ownsPool: boolean;
  /** Whether every session of the pool already runs at READ COMMITTED, so claims need not set it. */
  readCommittedSessions: boolean;
  /** Cross-process wake-ups, closed with the store; none when they are turned off. */
  notifier: ClosableNotifier | undefined;
}

/** The MySQL/MariaDB implementation of the storage contract; see `Store` for each operation. */
export class MysqlStore implements Store {
  readonly kind = 'mysql';
  readonly notifier: ClosableNotifier | undefined;
  readonly leadership: LeaderElection;
  /**
   * A job enqueued for a consumer already waiting is leased to it by its insert (sql/insert-and-claim-job.ts): its
   * read and its insert on one connection.
   */
  readonly handoff: Handoff = {
    insertAndClaimJob: (job, claim) =>
      this.retry('insertAndClaimJob', () =>
        onPinned(this.pool, (connection) => insertAndClaimJob(connection, this.t, job, claim)),
      ),
  };
  private readonly pool: Pool;
  private readonly t: Tables;
  private readonly target: string;
  private readonly ownsPool: boolean;
  private readonly readCommittedSessions: boolean;
  private closing: Promise<void> | null = null;
  private readonly schedules: ScheduleStore;
  /** Told the names of the parents this store's operations made ready (see `onParentsReady`). */
  private readonly readyListeners = new Set<(names: readonly string[]) => void>();

  constructor(parts: MysqlStoreParts) {
    this.pool = parts.pool;
    this.t = parts.tables;
    this.target = parts.target;
    this.ownsPool = parts.ownsPool;
    this.readCommittedSessions = parts.readCommittedSessions;
    this.notifier = parts.notifier;
    this.leadership = createMysqlLeaderElection(this.pool, this.t, this.target);
    this.schedules = mysqlSchedules(this.pool, this.t);
  }

  async insertJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
    if (jobs.length === 0) return [];
    return this.retry('insertJobs', () => insertJobs(this.pool, this.t, jobs));
  }

  async debounceJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
    const outcomes: InsertOutcome[] = [];
    // One transaction per job, each atomic on its own: a batch rarely debounces more than one key.
    for (const job of jobs) outcomes.push(await this.transaction('debounceJobs', (c) => debounceJob(c, this.t, job)));
    return outcomes;
  }

  async claimJobs(request: ClaimRequest): Promise<ClaimedRecord[]> {
    return this.transaction('claimJobs', (c) => claimJobs(c, this.t, request), {
      readCommitted: !this.readCommittedSessions,
    });
  }

  claimJobsUnlessHeld(request: ClaimRequest): Promise<ClaimedRecord[] | null> {
    return this.transaction('claimJobs', (c) => claimJobsUnlessHeld(c, this.t, request), {
      readCommitted: !this.readCommittedSessions,
    });
  }

  listQueueSettings(name?: string): Promise<QueueSettings[]> {
    return this.retry('listQueueSettings', () => listQueueSettings(this.pool, this.t, name));
  }

  async updateQueueSettings(name: string, change: QueueSettingsChange, now: Date): Promise<QueueSettings | null> {
    try {
      return await this.transaction('updateQueueSettings', (c) => updateQueueSettings(c, this.t, name, change, now));
    } catch (error) {
      if (error instanceof StrictOrderBroken) return null;
      throw error;
    }
  }

  claimLimitedJobs(request: ClaimRequest): Promise<LimitedClaim> {
    return this.transaction('claimLimitedJobs', (c) => claimLimitedJobs(c, this.t, request), {
      readCommitted: !this.readCommittedSessions,
    });
  }

  async completeJobs(jobs: readonly (LeaseRef & { result: unknown })[], now: Date): Promise<string[]> {
    if (jobs.length === 0) return [];
    // A batch that names each job once completes its jobs without a parent in one statement. A child completes in
    // a transaction with its parent's settling, as does a batch that names a job twice (an expired lease and the
    // one that took the job over), whose held rows are locked first.
    let rest = jobs;
    let completed: string[] = [];
    if (new Set(jobs.map((job) => job.id)).size === jobs.length) {
      completed = await this.retry('completeJobs', () =>
        completeHeldJobs(this.pool, this.t, jobs, now, 'parent_id IS NULL'),
      );
      if (completed.length === jobs.length) return completed;
      const done = new Set(completed);
      rest = jobs.filter((job) => !done.has(job.id));
    }
    const { ids, ready } = await this.transaction('completeJobs', (c) => completeJobs(c, this.t, rest, now));
    this.announceReady(ready);
    return [...completed, ...ids];
  }

  async releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]> {
    if (leases.length === 0) return [];
    return this.transaction('releaseJobs', (c) => releaseJobs(c, this.t, leases, now));
  }

  async failJob(lease: LeaseRef, outcome: { error: JobError; retryAt: Date | null }, now: Date): Promise<boolean> {
    if (await this.retry('failJob', () => failJob(this.pool, this.t, lease, outcome, now))) return true;
    if (outcome.retryAt !== null) return false;
    // No job without a parent matched: a held child dies in a transaction with its parent's settling.
    const { held, ready } = await this.transaction('failJob', (c) =>
      failHeldChild(c, this.t, lease, outcome.error, now),
    );
    this.announceReady(ready);
    return held;
  }

  async snoozeJob(lease: LeaseRef, runAt: Date, now: Date): Promise<boolean> {
    return this.retry('snoozeJob', () => snoozeJob(this.pool, this.t, lease, runAt, now));
  }

  async extendLease(lease: LeaseRef, leaseExpiresAt: Date, now: Date): Promise<Date | null> {
    return this.retry('extendLease', () => extendLease(this.pool, this.t, lease, leaseExpiresAt, now));
  }

  async recordProgress(lease: LeaseRef, progress: number, now: Date): Promise<boolean> {
    return this.updateHeld('recordProgress', lease, now, { set: 'progress = ?', values: [progress] });
  }

  async updatePayload(lease: LeaseRef, change: { payload: unknown; version: number }, now: Date): Promise<boolean> {
    const values = [writeJson(change.payload), change.version];
    return this.updateHeld('updatePayload', lease, now, { set: 'payload = ?, version = ?', values });
  }

  async moveJob(lease: LeaseRef, next: NewJob, now: Date): Promise<InsertOutcome | null> {
    try {
      const ready: string[] = [];
      const moved = await this.transaction('moveJob', (c) => {
        ready.length = 0;
        return moveJob(c, this.t, lease, next, now, ready);
      });
      this.announceReady(ready);
      return moved;
    } catch (error) {
      if (error instanceof KeyHolderVanished) return { job: null, created: false };
      throw error;
    }
  }

  async cancelJob(id: string, now: Date): Promise<JobRecord | null> {
    const { job, ready } = await this.transaction('cancelJob', (c) => cancelJob(c, this.t, id, now));
    this.announceReady(ready);
    return job;
  }

  async promoteJob(id: string, now: Date): Promise<JobRecord | null> {
    return this.transaction('promoteJob', (c) => promoteJob(c, this.t, id, now));
  }

  async rerunCompletedJob(id: string, now: Date): Promise<JobRecord | null> {
    return this.transaction('rerunCompletedJob', (c) => rerunCompletedJob(c, this.t, id, now));
  }

  async restoreCancelledJob(id: string, now: Date): Promise<JobRecord | null> {
    return this.transaction('restoreCancelledJob', (c) => restoreCancelledJob(c, this.t, id, now));
  }

  async removeJobByKey(name: string, key: string): Promise<JobRecord | null> {
    return this.transaction('removeJobByKey', (c) => removeJobByKey(c, this.t, name, key));
  }

  async getJob(id: string, read: JobRead = {}): Promise<JobRecord | null> {
    return this.retry('getJob', async () => (await selectJobsByIds(this.pool, this.t, [id], read)).get(id) ?? null);
  }

  async insertFlow(jobs: readonly NewJob[]): Promise<InsertOutcome> {
    const inserted = await this.retry('insertFlow', () => insertFlowAtOnce(this.pool, this.t, jobs));
    return inserted ?? this.transaction('insertFlow', (c) => insertFlow(c, this.t, jobs));
  }

  async waitForChildren(lease: LeaseRef, children: readonly NewJob[], now: Date): Promise<boolean> {
    return this.transaction('waitForChildren', (c) => waitForChildren(c, this.t, lease, children, now));
  }

  listChildren(parentId: string, page: ChildrenPageQuery): Promise<JobRecord[]> {
    return this.retry('listChildren', () => listChildren(this.pool, this.t, parentId, page));
  }

  listChildStates(parentId: string, page: { afterId?: string; limit: number }): Promise<ChildState[]> {
    return this.retry('listChildStates', () => listChildStates(this.pool, this.t, parentId, page));
  }

  listHeldChildren(lease: LeaseRef, page: ChildrenPageQuery, now: Date): Promise<HeldChildrenPage | null> {
    return this.retry('listHeldChildren', () => listHeldChildren(this.pool, this.t, lease, page, now));
  }

  onParentsReady(listener: (names: readonly string[]) => void): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  async ping(): Promise<void> {
    if (this.closing) throw storeClosed(this.kind);
    await this.retry('ping', () => selectRows(this.pool, 'SELECT 1'));
  }

  async listJobs(filter: ListFilter): Promise<JobRecord[]> {
    if (filter.states?.length === 0 || filter.limit <= 0) return [];
    return this.retry('listJobs', () => listJobs(this.pool, this.t, filter));
  }

  async countJobs(now: Date): Promise<JobCount[]> {
    return this.retry('countJobs', () => countJobs(this.pool, this.t, now));
  }

  async retryDeadJobs(target: { name?: string; ids?: readonly string[] }, now: Date): Promise<number> {
    const { retried, ready } = await this.transaction('retryDeadJobs', (c) => retryDeadJobs(c, this.t, target, now));
    this.announceReady(ready);
    return retried;
  }

  async requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>): Promise<SweptLease[]> {
    if (!(await this.retry('requeueExpiredLeases', () => hasExpiredLease(this.pool, this.t, now)))) return [];
    const ready: string[] = [];
    const swept = await this.transaction('requeueExpiredLeases', (c) => {
      ready.length = 0;
      return requeueExpiredLeases(c, this.t, now, error, ready);
    });
    this.announceReady(ready);
    return swept;
  }

  async pruneJobs(finishedBefore: Date, limit: number, now: Date): Promise<number> {
    return this.retry('pruneJobs', () => pruneJobs(this.pool, this.t, finishedBefore, limit, now));
  }

  async registerSchema(entry: SchemaEntry): Promise<SchemaEntry> {
    return this.retry('registerSchema', () => registerSchema(this.pool, this.t, entry));
  }

  async listSchemas(name?: string): Promise<SchemaEntry[]> {
    return this.retry('listSchemas', () => listSchemas(this.pool, this.t, name));
  }

  async removeSchema(name: string, version: number): Promise<boolean> {
    return this.retry('removeSchema', () => removeSchema(this.pool, this.t, name, version));
  }

  async recordWorker(worker: WorkerPresence, room: WorkerRoom): Promise<boolean> {
    return this.retry('recordWorker', () => recordWorker(this.pool, this.t, worker, room));
  }

  async pruneWorkers(seenBefore: Date): Promise<number> {
    return this.retry('pruneWorkers', () => pruneWorkers(this.pool, this.t, seenBefore));
  }

  async listWorkers(seenSince: Date): Promise<WorkerPresence[]> {
    return this.retry('listWorkers', () => listWorkers(this.pool, this.t, seenSince));
  }

  async touchWorkers(ids: readonly string[], seenAt: Date): Promise<void> {
    return this.retry('touchWorkers', () => touchWorkers(this.pool, this.t, ids, seenAt));
  }

  async upsertSchedule(schedule: StoredSchedule): Promise<void> {
    return this.retry('upsertSchedule', () => this.schedules.upsertSchedule(schedule));
  }

  async removeSchedule(key: string): Promise<boolean> {
    return this.retry('removeSchedule', () => this.schedules.removeSchedule(key));
  }

  async listSchedules(): Promise<StoredSchedule[]> {
    return this.retry('listSchedules', () => this.schedules.listSchedules());
  }

  async recordScheduleRun(run: ScheduleRun): Promise<void> {
    return this.retry('recordScheduleRun', () => this.schedules.recordScheduleRun(run));
  }

  async listScheduleRuns(keys: readonly string[]): Promise<ScheduleRun[]> {
    return this.retry('listScheduleRuns', () => this.schedules.listScheduleRuns(keys));
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      await this.notifier?.close();
      if (this.ownsPool) await this.pool.end();
    })();
    return this.closing;
  }

  /** Tells the listeners (`onParentsReady`) the names of parents an operation made ready, once it committed. */
  private announceReady(names: readonly string[]): void {
    if (names.length === 0) return;
    for (const listener of this.readyListeners) listener(names);
  }

  /** A fenced single-row update (update-held-job.ts), retried on deadlock. */
  private updateHeld(
    operation: string,
    lease: LeaseRef,
    now: Date,
    change: { set: string; values: readonly unknown[] },
  ): Promise<boolean> {
    return this.retry(operation, () => updateHeldJob(this.pool, this.t, lease, now, change));
  }

  private retry<T>(operation: string, work: () => Promise<T>): Promise<T> {
    return withDeadlockRetry(this.target, operation, work);
  }

  private transaction<T>(
    operation: string,
    work: (connection: PoolConnection) => Promise<T>,
    options: { readCommitted?: boolean } = {},
  ): Promise<T> {
    return this.retry(operation, () => inTransaction(this.pool, work, options));
  }
}
