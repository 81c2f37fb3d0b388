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
  WorkerPresence,
} from '../../engine/store.ts';
import { FINISHED_STATES, type JobError, type JobState } from '../../jobs.ts';
import type { LeaderElection } from '../../roles/leadership.ts';
import { storeClosed } from '../shared/closed-store.ts';
import { keyExpired } from '../shared/deduplication.ts';
import { insertedRecord } from '../shared/inserted-record.ts';
import { notStartedState } from '../shared/not-started.ts';
import { execute, inTransaction, selectRows } from './connection.ts';
import { debounceJob, releaseExpiredKeys } from './deduplication.ts';
import { withDeadlockRetry } from './errors.ts';
import { claimLimitedJobs, listQueueSettings, updateQueueSettings } from './flow-control.ts';
import {
  claimCandidatesSql,
  END_LEASE_KEEPING_TOKEN,
  FENCE,
  fenceValues,
  idempotencyRef,
  leaseJobs,
  listJobsQuery,
  PROMOTE_BATCH,
  promoteDueJobsSql,
  RELEASE_LEASE,
  selectInserted,
  selectJobsByIds,
} from './job-queries.ts';
import { createMysqlLeaderElection } from './leadership.ts';
import { listSchemas, listWorkers, recordWorker, registerSchema, touchWorkers } from './registries.ts';
import { mysqlSchedules } from './schedules.ts';
import {
  claimedRecord,
  delayedUntil,
  JOB_COLUMNS,
  jobRow,
  NOT_STARTED_SQL,
  newJobValues,
  ORDER_KEY_SQL,
  sqlDate,
  writeJson,
} from './rows.ts';
import type { Tables } from './tables.ts';

/** The finished states as the placeholders of an `IN (…)` list, their values passed as parameters. */
const FINISHED_STATE_PLACEHOLDERS = FINISHED_STATES.map(() => '?').join(', ');

/** Thrown inside `moveJob`'s transaction to roll it back when the next job's key holder vanished. */
class KeyHolderVanished extends Error {}

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
    this.capabilities = { notify: parts.notifier !== undefined, leadership: true, insertAndClaim: false };
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
    const { now } = request;
    // Every due job, however many came due at once, so that none ranked before a claimed one is left delayed.
    const promote = promoteDueJobsSql(this.t);
    while ((await execute(c, promote, [request.name, sqlDate(now)])).affectedRows === PROMOTE_BATCH);
    const locked = await selectRows(c, claimCandidatesSql(this.t), [
      request.name,
      sqlDate(now),
      request.minVersion,
      request.maxVersion,
      request.limit,
    ]);
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
    return this.transaction('completeJobs', async (c) => {
      const held = await this.lockHeld(c, jobs, now);
      const results = new Map<string, string>();
      for (const job of jobs) {
        if (held.has(job.id) && !results.has(job.id)) results.set(job.id, writeJson(job.result));
      }
      if (results.size === 0) return [];
      const ids = [...results.keys()];
      await execute(
        c,
        `UPDATE ${this.t.jobs}
         SET state = 'completed', result = CASE id ${ids.map(() => 'WHEN ? THEN ?').join(' ')} END,
           ${END_LEASE_KEEPING_TOKEN}, finished_at = ?, updated_at = ?
         WHERE id IN (?)`,
        [...ids.flatMap((id) => [id, results.get(id)]), sqlDate(now), sqlDate(now), ids],
      );
      return ids;
    });
  }

  async releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]> {
    if (leases.length === 0) return [];
    return this.transaction('releaseJobs', async (c) => {
      const ids = [...(await this.lockHeld(c, leases, now))];
      if (ids.length === 0) return [];
      await execute(
        c,
        `UPDATE ${this.t.jobs}
         SET state = 'waiting', attempts = attempts - 1, ${RELEASE_LEASE}, worker_id = NULL, updated_at = ?
         WHERE id IN (?)`,
        [sqlDate(now), ids],
      );
      return ids;
    });
  }

  /** Of `leases`, the ids whose job that token holds, active with its lease unexpired; their rows locked. */
  private async lockHeld(c: PoolConnection, leases: readonly LeaseRef[], now: Date): Promise<Set<string>> {
    const held = await selectRows(
      c,
      `SELECT id, lease_token FROM ${this.t.jobs}
       WHERE id IN (?) AND state = 'active' AND lease_expires_at > ? FOR UPDATE`,
      [leases.map((lease) => lease.id), sqlDate(now)],
    );
    const tokens = new Map(held.map((row) => [String(row.id), String(row.lease_token)]));
    return new Set(leases.filter((lease) => tokens.get(lease.id) === lease.leaseToken).map((lease) => lease.id));
  }

  async failJob(lease: LeaseRef, outcome: { error: JobError; retryAt: Date | null }, now: Date): Promise<boolean> {
    const { retryAt } = outcome;
    const error = writeJson(outcome.error);
    if (retryAt === null) {
      return this.fencedUpdate('failJob', lease, now, `state = 'dead', error = ?, ${RELEASE_LEASE}, finished_at = ?`, [
        error,
        sqlDate(now),
      ]);
    }
    const retryState = notStartedState(retryAt, now);
    return this.fencedUpdate(
      'failJob',
      lease,
      now,
      `state = ?, delayed_until = ?, error = ?, ${RELEASE_LEASE}, run_at = ?, order_key = ${ORDER_KEY_SQL}`,
      [retryState, delayedUntil(retryState, retryAt), error, sqlDate(retryAt), retryAt.getTime(), retryAt.getTime()],
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
      return await this.transaction('moveJob', async (c) => {
        const moved = await execute(
          c,
          `UPDATE ${this.t.jobs} SET state = 'completed', moved_to = ?, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
           WHERE ${FENCE}`,
          [next.id, sqlDate(now), sqlDate(now), ...fenceValues(lease, now)],
        );
        if (moved.affectedRows === 0) return null;
        await execute(
          c,
          `INSERT INTO ${this.t.jobs} (${JOB_COLUMNS.join(', ')}) VALUES ? ON DUPLICATE KEY UPDATE id = id`,
          [[newJobValues(next)]],
        );
        if (next.idempotencyKey === null) return { job: insertedRecord(next), created: true };
        // A next job whose idempotency key is taken becomes that retained job, as an enqueue would.
        const holder = (await selectInserted(c, this.t, [next])).byKey.get(
          idempotencyRef(next.name, next.idempotencyKey),
        );
        if (!holder) throw new KeyHolderVanished();
        if (holder.id === next.id) return { job: insertedRecord(next), created: true };
        await execute(c, `UPDATE ${this.t.jobs} SET moved_to = ? WHERE id = ?`, [holder.id, lease.id]);
        return { job: holder, created: false };
      });
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

  async getJob(id: string): Promise<JobRecord | null> {
    return this.retry('getJob', async () => (await selectJobsByIds(this.pool, this.t, [id])).get(id) ?? null);
  }

  async ping(): Promise<void> {
    if (this.closing) throw storeClosed(this.kind);
    await this.retry('ping', () => selectRows(this.pool, 'SELECT 1'));
  }

  async listJobs(filter: ListFilter): Promise<JobRecord[]> {
    if (filter.states?.length === 0 || filter.limit <= 0) return [];
    const { sql, values } = listJobsQuery(this.t, filter);
    return this.retry('listJobs', async () => (await selectRows(this.pool, sql, values)).map(jobRow));
  }

  async countJobs(now: Date): Promise<JobCount[]> {
    return this.retry('countJobs', async () => {
      const rows = await selectRows(
        this.pool,
        `SELECT name, version,
           CASE WHEN state NOT IN ${NOT_STARTED_SQL} THEN state WHEN run_at > ? THEN 'scheduled' ELSE 'ready' END AS visible_state,
           COUNT(*) AS count
         FROM ${this.t.jobs} GROUP BY name, version, visible_state ORDER BY name, version, visible_state`,
        [sqlDate(now)],
      );
      return rows.map((row) => ({
        name: String(row.name),
        version: Number(row.version),
        state: String(row.visible_state) as JobState,
        count: Number(row.count),
      }));
    });
  }

  async retryDeadJobs(target: { name?: string; ids?: readonly string[] }, now: Date): Promise<number> {
    if (target.ids?.length === 0) return 0;
    const where = [`state = 'dead'`];
    const values: unknown[] = [sqlDate(now), now.getTime(), now.getTime(), sqlDate(now)];
    if (target.name !== undefined) {
      where.push('name = ?');
      values.push(target.name);
    }
    if (target.ids !== undefined) {
      where.push('id IN (?)');
      values.push(target.ids);
    }
    return this.retry('retryDeadJobs', async () => {
      const retried = await execute(
        this.pool,
        `UPDATE ${this.t.jobs}
         SET state = 'waiting', run_at = ?, order_key = ${ORDER_KEY_SQL}, attempts = 0, finished_at = NULL,
           ${RELEASE_LEASE}, updated_at = ?
         WHERE ${where.join(' AND ')}`,
        values,
      );
      return retried.affectedRows;
    });
  }

  async requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>): Promise<{ requeued: number; dead: number }> {
    const at = sqlDate(now);
    // The recorded error names the attempt that lost its lease: each row's own `attempts`.
    const errorSql = `JSON_SET(?, '$.attempt', attempts)`;
    const errorJson = writeJson(error);
    // A plain read first: most sweeps find nothing, and then take no locks at all.
    const expired = await this.retry('requeueExpiredLeases', () =>
      selectRows(this.pool, `SELECT id FROM ${this.t.jobs} WHERE state = 'active' AND lease_expires_at <= ? LIMIT 1`, [
        at,
      ]),
    );
    if (expired.length === 0) return { requeued: 0, dead: 0 };
    return this.transaction('requeueExpiredLeases', async (c) => {
      const dead = await execute(
        c,
        `UPDATE ${this.t.jobs} SET state = 'dead', error = ${errorSql}, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
         WHERE state = 'active' AND lease_expires_at <= ? AND attempts >= max_attempts`,
        [errorJson, at, at, at],
      );
      const requeued = await execute(
        c,
        `UPDATE ${this.t.jobs}
         SET state = 'waiting', error = ${errorSql}, ${RELEASE_LEASE}, updated_at = ?
         WHERE state = 'active' AND lease_expires_at <= ?`,
        [errorJson, at, at],
      );
      return { requeued: requeued.affectedRows, dead: dead.affectedRows };
    });
  }

  async pruneJobs(finishedBefore: Date, limit: number): Promise<number> {
    if (limit <= 0) return 0;
    return this.retry('pruneJobs', async () => {
      const pruned = await execute(
        this.pool,
        `DELETE FROM ${this.t.jobs}
         WHERE finished_at < ? AND state IN (${FINISHED_STATE_PLACEHOLDERS}) ORDER BY finished_at LIMIT ?`,
        [sqlDate(finishedBefore), ...FINISHED_STATES, Math.floor(limit)],
      );
      return pruned.affectedRows;
    });
  }

  async registerSchema(entry: SchemaEntry): Promise<SchemaEntry> {
    return this.retry('registerSchema', () => registerSchema(this.pool, this.t, entry));
  }

  async listSchemas(name?: string): Promise<SchemaEntry[]> {
    return this.retry('listSchemas', () => listSchemas(this.pool, this.t, name));
  }

  async recordWorker(worker: WorkerPresence): Promise<void> {
    return this.retry('recordWorker', () => recordWorker(this.pool, this.t, worker));
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
