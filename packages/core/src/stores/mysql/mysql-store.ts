import type { Pool, PoolConnection } from 'mysql2/promise';
import type {
  ClaimedRecord,
  ClaimRequest,
  ClosableNotifier,
  InsertOutcome,
  JobCount,
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
  StoreCapabilities,
  StoredSchedule,
  SweptLease,
  WorkerPresence,
  WorkerRoom,
} from '../../engine/store.ts';
import type { JobError } from '../../jobs.ts';
import type { LeaderElection } from '../../roles/leadership.ts';
import { storeClosed } from '../shared/closed-store.ts';
import { keyExpired } from '../shared/deduplication.ts';
import { insertedRecord } from '../shared/inserted-record.ts';
import { notStartedState } from '../shared/not-started.ts';
import { execute, inTransaction, selectRows } from './connection.ts';
import { countJobs } from './count-jobs.ts';
import { debounceJob, releaseExpiredKeys } from './deduplication.ts';
import { appendedErrorsSql } from './error-history.ts';
import { withDeadlockRetry } from './errors.ts';
import { claimLimitedJobs, listQueueSettings, updateQueueSettings } from './flow-control.ts';
import { completeHeldJobs, releaseHeldJobs } from './held-jobs.ts';
import {
  FENCE,
  fenceValues,
  idempotencyRef,
  leaseJobs,
  pickInOrder,
  promoteDueJobs,
  RELEASE_LEASE,
  selectInserted,
  selectJobsByIds,
} from './job-queries.ts';
import { createMysqlLeaderElection } from './leadership.ts';
import { listJobs } from './list-jobs.ts';
import { hasExpiredLease, pruneJobs, requeueExpiredLeases, retryDeadJobs } from './maintenance.ts';
import { KeyHolderVanished, moveJob } from './move-job.ts';
import {
  listSchemas,
  listWorkers,
  pruneWorkers,
  recordWorker,
  registerSchema,
  removeSchema,
  touchWorkers,
} from './registries.ts';
import {
  claimedRecord,
  delayedUntil,
  JOB_COLUMNS,
  NOT_STARTED_SQL,
  newJobValues,
  ORDER_KEY_SQL,
  sqlDate,
  writeJson,
} from './rows.ts';
import { mysqlSchedules } from './schedules.ts';
import type { Tables } from './tables.ts';

/** A failed attempt's error (JSON text, given twice) appended to `errors`, then made the last `error`. */
const RECORD_ERROR = `errors = ${appendedErrorsSql('?')}, error = ?`;

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
  /** Cross-process wake-ups, closed with the store; none declares `notify: false`. */
  notifier: ClosableNotifier | undefined;
}

/** The MySQL/MariaDB implementation of the storage contract; see `Store` for each operation. */
export class MysqlStore implements Store {
  readonly kind = 'mysql';
  readonly capabilities: StoreCapabilities;
  readonly notifier: ClosableNotifier | undefined;
  readonly leadership: LeaderElection;
  private readonly pool: Pool;
  private readonly t: Tables;
  private readonly target: string;
  private readonly ownsPool: boolean;
  private readonly readCommittedSessions: boolean;
  private closing: Promise<void> | null = null;
  private readonly schedules: ScheduleStore;

  constructor(parts: MysqlStoreParts) {
    this.pool = parts.pool;
    this.t = parts.tables;
    this.target = parts.target;
    this.ownsPool = parts.ownsPool;
    this.readCommittedSessions = parts.readCommittedSessions;
    this.notifier = parts.notifier;
    this.capabilities = {
      notify: parts.notifier !== undefined,
      leadership: true,
      insertAndClaim: false,
      completeAndClaim: false,
    };
    this.leadership = createMysqlLeaderElection(this.pool, this.t, this.target);
    this.schedules = mysqlSchedules(this.pool, this.t);
  }

  async insertJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
    if (jobs.length === 0) return [];
    const keyed = jobs.filter((job) => job.idempotencyKey !== null);
    return this.retry('insertJobs', async () => {
      // ON DUPLICATE KEY UPDATE turns a key conflict into a no-op, unlike INSERT IGNORE, which would hide other errors.
      await execute(
        this.pool,
        `INSERT INTO ${this.t.jobs} (${JOB_COLUMNS.join(', ')}) VALUES ? ON DUPLICATE KEY UPDATE id = id`,
        [jobs.map(newJobValues)],
      );
      // A job without a key was inserted as sent; only a key may have been taken, so only keyed jobs are read.
      if (keyed.length === 0) return jobs.map((job) => ({ job: insertedRecord(job), created: true }));
      const { byKey } = await selectInserted(this.pool, this.t, keyed);
      const expired: NewJob[] = [];
      const outcomes = jobs.map((job): InsertOutcome => {
        if (job.idempotencyKey === null) return { job: insertedRecord(job), created: true };
        const found = byKey.get(idempotencyRef(job.name, job.idempotencyKey));
        // No holder: it was pruned between the two statements; an expired one lets go of its key (see `KeyHolderGone`).
        if (!found) return { job: null, created: false };
        if (found.id === job.id) return { job: insertedRecord(job), created: true };
        if (!keyExpired(found, job)) return { job: found, created: false };
        expired.push(job);
        return { job: null, created: false };
      });
      await releaseExpiredKeys(this.pool, this.t, expired);
      return outcomes;
    });
  }

  async debounceJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
    const outcomes: InsertOutcome[] = [];
    // One transaction per job, each atomic on its own: a batch rarely debounces more than one key.
    for (const job of jobs) outcomes.push(await this.transaction('debounceJobs', (c) => debounceJob(c, this.t, job)));
    return outcomes;
  }

  async claimJobs(request: ClaimRequest): Promise<ClaimedRecord[]> {
    return this.transaction('claimJobs', (c) => this.claimOn(c, request), {
      readCommitted: !this.readCommittedSessions,
    });
  }

  listQueueSettings(name?: string): Promise<QueueSettings[]> {
    return this.retry('listQueueSettings', () => listQueueSettings(this.pool, this.t, name));
  }

  updateQueueSettings(name: string, change: QueueSettingsChange, now: Date): Promise<QueueSettings> {
    return this.transaction('updateQueueSettings', (c) => updateQueueSettings(c, this.t, name, change, now));
  }

  claimLimitedJobs(request: ClaimRequest): Promise<LimitedClaim> {
    return this.transaction(
      'claimLimitedJobs',
      (c) => claimLimitedJobs(c, this.t, request, (on, claim) => this.claimOn(on, claim)),
      { readCommitted: !this.readCommittedSessions },
    );
  }

  /** `claimJobs` on a connection in a transaction. */
  private async claimOn(c: PoolConnection, request: ClaimRequest): Promise<ClaimedRecord[]> {
    // Every due job, so that none ranked before a claimed one is left delayed.
    await promoteDueJobs(c, this.t, request.name, request.now);
    const locked = await pickInOrder(c, this.t, request, request.limit);
    if (locked.length === 0) return [];
    await leaseJobs(
      c,
      this.t,
      locked.map((row) => String(row.id)),
      request,
    );
    return locked.map((row) => claimedRecord(row, request));
  }

  async completeJobs(jobs: readonly (LeaseRef & { result: unknown })[], now: Date): Promise<string[]> {
    if (jobs.length === 0) return [];
    return this.transaction('completeJobs', (c) => completeHeldJobs(c, this.t, jobs, now));
  }

  async releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]> {
    if (leases.length === 0) return [];
    return this.transaction('releaseJobs', (c) => releaseHeldJobs(c, this.t, leases, now));
  }

  async failJob(lease: LeaseRef, outcome: { error: JobError; retryAt: Date | null }, now: Date): Promise<boolean> {
    const { retryAt } = outcome;
    const error = writeJson(outcome.error);
    if (retryAt === null) {
      return this.fencedUpdate(
        'failJob',
        lease,
        now,
        `state = 'dead', ${RECORD_ERROR}, ${RELEASE_LEASE}, finished_at = ?`,
        [error, error, sqlDate(now)],
      );
    }
    const retryState = notStartedState(retryAt, now);
    return this.fencedUpdate(
      'failJob',
      lease,
      now,
      `state = ?, delayed_until = ?, ${RECORD_ERROR}, ${RELEASE_LEASE}, run_at = ?, order_key = ${ORDER_KEY_SQL}`,
      [
        retryState,
        delayedUntil(retryState, retryAt),
        error,
        error,
        sqlDate(retryAt),
        retryAt.getTime(),
        retryAt.getTime(),
      ],
    );
  }

  async extendLease(lease: LeaseRef, leaseExpiresAt: Date, now: Date): Promise<boolean> {
    return this.fencedUpdate('extendLease', lease, now, 'lease_expires_at = ?', [sqlDate(leaseExpiresAt)]);
  }

  async recordProgress(lease: LeaseRef, progress: number, now: Date): Promise<boolean> {
    return this.fencedUpdate('recordProgress', lease, now, 'progress = ?', [progress]);
  }

  async updatePayload(lease: LeaseRef, change: { payload: unknown; version: number }, now: Date): Promise<boolean> {
    const values = [writeJson(change.payload), change.version];
    return this.fencedUpdate('updatePayload', lease, now, 'payload = ?, version = ?', values);
  }

  async moveJob(lease: LeaseRef, next: NewJob, now: Date): Promise<InsertOutcome | null> {
    try {
      return await this.transaction('moveJob', (c) => moveJob(c, this.t, lease, next, now));
    } catch (error) {
      if (error instanceof KeyHolderVanished) return { job: null, created: false };
      throw error;
    }
  }

  async cancelJob(id: string, now: Date): Promise<JobRecord | null> {
    return this.transaction('cancelJob', async (c) => {
      const cancelled = await execute(
        c,
        `UPDATE ${this.t.jobs} SET state = 'cancelled', delayed_until = NULL, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
         WHERE id = ? AND state IN ('delayed', 'waiting', 'active')`,
        [sqlDate(now), sqlDate(now), id],
      );
      return cancelled.affectedRows === 0 ? null : ((await selectJobsByIds(c, this.t, [id])).get(id) ?? null);
    });
  }

  async promoteJob(id: string, now: Date): Promise<JobRecord | null> {
    return this.transaction('promoteJob', async (c) => {
      const promoted = await execute(
        c,
        `UPDATE ${this.t.jobs} SET state = 'waiting', delayed_until = NULL, run_at = ?, order_key = ${ORDER_KEY_SQL},
           updated_at = ?
         WHERE id = ? AND state IN ${NOT_STARTED_SQL} AND run_at > ?`,
        [sqlDate(now), now.getTime(), now.getTime(), sqlDate(now), id, sqlDate(now)],
      );
      return promoted.affectedRows === 0 ? null : ((await selectJobsByIds(c, this.t, [id])).get(id) ?? null);
    });
  }

  async getJob(id: string): Promise<JobRecord | null> {
    return this.retry('getJob', async () => (await selectJobsByIds(this.pool, this.t, [id])).get(id) ?? null);
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
    return this.retry('retryDeadJobs', () => retryDeadJobs(this.pool, this.t, target, now));
  }

  async requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>): Promise<SweptLease[]> {
    if (!(await this.retry('requeueExpiredLeases', () => hasExpiredLease(this.pool, this.t, now)))) return [];
    return this.transaction('requeueExpiredLeases', (c) => requeueExpiredLeases(c, this.t, now, error));
  }

  async pruneJobs(finishedBefore: Date, limit: number): Promise<number> {
    return this.retry('pruneJobs', () => pruneJobs(this.pool, this.t, finishedBefore, limit));
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

  /**
   * A fenced single-row update, one statement; resolves to whether the lease held (`affectedRows` counts the
   * matched row, see `execute`).
   */
  private fencedUpdate(
    operation: string,
    lease: LeaseRef,
    now: Date,
    set: string,
    values: readonly unknown[],
  ): Promise<boolean> {
    return this.retry(operation, async () => {
      const updated = await execute(this.pool, `UPDATE ${this.t.jobs} SET ${set}, updated_at = ? WHERE ${FENCE}`, [
        ...values,
        sqlDate(now),
        ...fenceValues(lease, now),
      ]);
      return updated.affectedRows === 1;
    });
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
