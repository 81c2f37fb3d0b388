import { newJobId } from '../../engine/ids.ts';
import type {
  ClaimedRecord,
  ClaimRequest,
  ClosableNotifier,
  InsertOutcome,
  JobCount,
  JobRecord,
  LeaseRef,
  ListFilter,
  NewJob,
  SchemaEntry,
  Store,
  StoreCapabilities,
  StoredState,
  StoreNotifier,
  WorkerPresence,
} from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import type { JobError } from '../../jobs.ts';
import type { LeaderElection } from '../../roles/leadership.ts';
import { handedRecord, insertedRecord, leaseExpiry } from '../shared/inserted-record.ts';
import {
  type ClaimedRow,
  type JobRow,
  newJobParams,
  newJobValues,
  shareSettings,
  toClaimedRecord,
  toJobRecord,
  toJsonText,
} from './job-rows.ts';
import { createPgLeaderElection } from './leadership.ts';
import { quoteSchema } from './migrations.ts';
import { listSchemas, listWorkers, recordWorker, registerSchema } from './registries.ts';
import type { SqlClient, SqlQueryable, SqlStatement } from './sql-client.ts';
import { buildListJobs, buildStatements, type Statements } from './statements.ts';
import { VacuumPacer } from './vacuum-pacer.ts';

export interface PostgresStoreInit {
  kind: string;
  client: SqlClient;
  /** Already migrated. */
  schema: string;
  notifier?: ClosableNotifier;
  /**
   * Runs `VACUUM` on the jobs table (`vacuumJobs`) after this many claimed,
   * completed, cancelled or pruned rows, or more for a large table (see
   * `VACUUM_BALANCE`). Each claim leaves a dead entry at the front of the
   * claim index; until a vacuum removes them every claim walks past them, so
   * claims slow down with churn. PGlite has no autovacuum, and a server's runs
   * at most once a minute.
   * @defaultValue 0: never
   */
  vacuumEveryRows?: number;
}

const idempotencyRef = (name: string, key: string) => JSON.stringify([name, key]);

function compareKeys(a: NewJob, b: NewJob): number {
  const [keyA, keyB] = [idempotencyRef(a.name, a.idempotencyKey ?? ''), idempotencyRef(b.name, b.idempotencyKey ?? '')];
  return keyA < keyB ? -1 : keyA > keyB ? 1 : 0;
}

/** How often `insertJobs` retries keys whose holding job was pruned between its two statements. */
const INSERT_TRIES = 3;

/**
 * The PostgreSQL store, over any `SqlClient` (node-postgres or PGlite). Each
 * operation is one statement, except `moveJob`, which is one transaction.
 * No transaction is held while a job runs: a lease is a token and an expiry.
 */
export class PostgresStore implements Store {
  readonly kind: string;
  readonly capabilities: StoreCapabilities;
  readonly notifier?: StoreNotifier;
  readonly leadership: LeaderElection;
  private readonly client: SqlClient;
  private readonly quotedSchema: string;
  private readonly sql: Statements;
  private readonly ownedNotifier: ClosableNotifier | undefined;
  private closing: Promise<void> | undefined;
  private readonly vacuums: VacuumPacer;

  constructor(options: PostgresStoreInit) {
    this.kind = options.kind;
    this.client = options.client;
    this.quotedSchema = quoteSchema(options.schema);
    this.sql = buildStatements(this.quotedSchema);
    this.ownedNotifier = options.notifier;
    this.capabilities = { notify: options.notifier !== undefined, leadership: true, insertAndClaim: true };
    this.leadership = createPgLeaderElection(this.client, this.quotedSchema);
    if (options.notifier) this.notifier = options.notifier;
    this.vacuums = new VacuumPacer(
      options.vacuumEveryRows ?? 0,
      () => this.vacuum(),
      () => this.estimateRows(),
    );
  }

  async insertJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
    if (jobs.length === 0) return [];
    // A key repeated inside the batch is inserted once; the later jobs map to the first one's outcome.
    const firstByKey = new Map<string, NewJob>();
    for (const job of jobs) {
      if (job.idempotencyKey === null) continue;
      const ref = idempotencyRef(job.name, job.idempotencyKey);
      if (!firstByKey.has(ref)) firstByKey.set(ref, job);
    }
    // Concurrent batches take their keys in one global order, so they wait on each other instead of deadlocking.
    const unique =
      firstByKey.size === 0
        ? jobs
        : jobs
            .filter(
              (job) =>
                job.idempotencyKey === null || firstByKey.get(idempotencyRef(job.name, job.idempotencyKey)) === job,
            )
            .sort(compareKeys);
    const outcomes = await this.insertUnique(unique, INSERT_TRIES);
    return jobs.map((job) => {
      const own = outcomes.get(job.id);
      if (own) return own;
      const first = firstByKey.get(idempotencyRef(job.name, job.idempotencyKey ?? '')) as NewJob;
      return { job: (outcomes.get(first.id) as InsertOutcome).job, created: false };
    });
  }

  /** Inserts jobs with distinct keys; a job whose key is taken gets the job holding it. Outcomes by new job id. */
  private async insertUnique(jobs: readonly NewJob[], triesLeft: number): Promise<Map<string, InsertOutcome>> {
    const outcomes = new Map<string, InsertOutcome>();
    for (const job of await this.insertNew(this.client, jobs)) {
      outcomes.set(job.id, { job: insertedRecord(job), created: true });
    }
    const conflicted = jobs.filter((job) => !outcomes.has(job.id));
    if (conflicted.length === 0) return outcomes;
    const holders = new Map<string, JobRecord>();
    const rows = await this.client.query<JobRow>(this.sql.selectByIdempotencyKeys, [
      conflicted.map((job) => job.name),
      conflicted.map((job) => job.idempotencyKey),
    ]);
    for (const row of rows) holders.set(idempotencyRef(row.name, row.idempotency_key ?? ''), toJobRecord(row));
    const vanished: NewJob[] = [];
    for (const job of conflicted) {
      const holder = holders.get(idempotencyRef(job.name, job.idempotencyKey ?? ''));
      if (holder) outcomes.set(job.id, { job: holder, created: false });
      else vanished.push(job);
    }
    if (vanished.length === 0) return outcomes;
    // The job holding a key was pruned between the two statements: the key is free again.
    if (triesLeft <= 1) {
      throw new WorkqError('CONFLICT', 'The idempotency keys of this batch kept changing hands; try again.', {
        retryable: true,
      });
    }
    for (const [id, outcome] of await this.insertUnique(vanished, triesLeft - 1)) outcomes.set(id, outcome);
    return outcomes;
  }

  async claimJobs(request: ClaimRequest): Promise<ClaimedRecord[]> {
    if (request.limit <= 0) return [];
    const { text, params } = this.claimStatement(request);
    const rows = await this.client.query<ClaimedRow>(text, params);
    this.vacuums.noteChangedRows(rows.length);
    return rows.map((row) => toClaimedRecord(row, request));
  }

  private claimStatement(request: ClaimRequest): SqlStatement {
    const { name, now, minVersion, maxVersion, limit, leaseToken, workerId, leaseMs } = request;
    return {
      text: this.sql.claimJobs,
      params: [name, now, minVersion, maxVersion, limit, leaseToken, workerId, leaseMs],
    };
  }

  async insertAndClaimJob(
    job: NewJob,
    claim: ClaimRequest,
  ): Promise<{ job: JobRecord; claimed: ClaimedRecord | null } | null> {
    const { text, params } = this.insertAndClaimStatement(job, claim);
    const [row] = await this.client.query<{ state: StoredState }>(text, params);
    // Only a keyed insert returns no row: its key was taken.
    if (!row) return null;
    if (row.state !== 'active') return { job: insertedRecord(job), claimed: null };
    const handed = handedRecord(job, claim);
    return { job: handed, claimed: handed };
  }

  private insertAndClaimStatement(job: NewJob, claim: ClaimRequest): SqlStatement {
    const { now, minVersion, maxVersion, leaseToken, workerId } = claim;
    const params = [...newJobValues(job), now, minVersion, maxVersion, leaseToken, workerId, leaseExpiry(job, claim)];
    const text = job.idempotencyKey === null ? this.sql.insertAndClaimJob : this.sql.insertAndClaimKeyedJob;
    return { text, params };
  }

  async completeJobs(jobs: readonly (LeaseRef & { result: unknown })[], now: Date): Promise<string[]> {
    if (jobs.length === 0) return [];
    const { text, params } = this.completeStatement(jobs, now);
    const rows = await this.client.query<{ id: string }>(text, params);
    this.vacuums.noteChangedRows(rows.length);
    return rows.map((row) => row.id);
  }

  private completeStatement(jobs: readonly (LeaseRef & { result: unknown })[], now: Date): SqlStatement {
    const ids = jobs.map((job) => job.id);
    const tokens = jobs.map((job) => job.leaseToken);
    const results = jobs.map((job) => toJsonText(job.result));
    return { text: this.sql.completeJobs, params: [ids, tokens, results, now] };
  }

  async releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]> {
    if (leases.length === 0) return [];
    const ids = leases.map((lease) => lease.id);
    const tokens = leases.map((lease) => lease.leaseToken);
    const rows = await this.client.query<{ id: string }>(this.sql.releaseJobs, [ids, tokens, now]);
    this.vacuums.noteChangedRows(rows.length);
    return rows.map((row) => row.id);
  }

  async failJob(
    lease: LeaseRef,
    outcome: { error: JobError; retryAt: Date | null },
    now: Date,
  ): Promise<JobRecord | null> {
    return this.one(this.client, this.sql.failJob, [
      lease.id,
      lease.leaseToken,
      outcome.retryAt,
      toJsonText(outcome.error),
      now,
    ]);
  }

  async extendLease(lease: LeaseRef, leaseExpiresAt: Date, now: Date): Promise<JobRecord | null> {
    return this.one(this.client, this.sql.extendLease, [lease.id, lease.leaseToken, leaseExpiresAt, now]);
  }

  async recordProgress(lease: LeaseRef, progress: number, now: Date): Promise<JobRecord | null> {
    return this.one(this.client, this.sql.recordProgress, [lease.id, lease.leaseToken, progress, now]);
  }

  async updatePayload(
    lease: LeaseRef,
    change: { payload: unknown; version: number },
    now: Date,
  ): Promise<JobRecord | null> {
    const values = [lease.id, lease.leaseToken, toJsonText(change.payload), change.version, now];
    return this.one(this.client, this.sql.updatePayload, values);
  }

  async moveJob(lease: LeaseRef, next: NewJob, now: Date): Promise<{ from: JobRecord; to: JobRecord } | null> {
    return this.client.transaction(async (tx) => {
      const from = await this.one(tx, this.sql.completeMovedJob, [lease.id, lease.leaseToken, next.id, now]);
      if (!from) return null;
      const [inserted] = await this.insertNew(tx, [next]);
      if (inserted) return { from, to: insertedRecord(inserted) };
      // `next` carries an idempotency key already used: the job moves into that job.
      const [existing] = await tx.query<JobRow>(this.sql.selectByIdempotencyKeys, [[next.name], [next.idempotencyKey]]);
      if (!existing) {
        throw new WorkqError(
          'CONFLICT',
          `The idempotency key of job ${next.id} changed hands while moving; try again.`,
          {
            retryable: true,
          },
        );
      }
      const moved = await this.one(tx, this.sql.setMovedTo, [from.id, existing.id]);
      return { from: moved ?? from, to: toJobRecord(existing) };
    });
  }

  async cancelJob(id: string, now: Date): Promise<JobRecord | null> {
    const cancelled = await this.one(this.client, this.sql.cancelJob, [id, now]);
    if (cancelled) this.vacuums.noteChangedRows(1);
    return cancelled;
  }

  async getJob(id: string): Promise<JobRecord | null> {
    return this.one(this.client, this.sql.getJob, [id]);
  }

  async ping(): Promise<void> {
    await this.client.query('SELECT 1');
  }

  async listJobs(filter: ListFilter): Promise<JobRecord[]> {
    if (filter.limit <= 0 || filter.states?.length === 0) return [];
    const { text, params } = buildListJobs(this.quotedSchema, filter);
    return (await this.client.query<JobRow>(text, params)).map(toJobRecord);
  }

  async countJobs(now: Date): Promise<JobCount[]> {
    const rows = await this.client.query<JobCount>(this.sql.countJobs, [now]);
    return rows.map((row) => ({ name: row.name, version: row.version, state: row.state, count: Number(row.count) }));
  }

  async retryDeadJobs(target: { name?: string; ids?: readonly string[] }, now: Date): Promise<number> {
    if (target.ids?.length === 0) return 0;
    const [row] = await this.client.query<{ count: number }>(this.sql.retryDeadJobs, [
      target.name ?? null,
      target.ids ? [...target.ids] : null,
      now,
    ]);
    return Number(row?.count ?? 0);
  }

  async requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>): Promise<{ requeued: number; dead: number }> {
    const [row] = await this.client.query<{ requeued: number; dead: number }>(this.sql.requeueExpiredLeases, [
      now,
      toJsonText({ ...error, attempt: 0 }),
    ]);
    return { requeued: Number(row?.requeued ?? 0), dead: Number(row?.dead ?? 0) };
  }

  async pruneJobs(finishedBefore: Date, limit: number): Promise<number> {
    if (limit <= 0) return 0;
    const [row] = await this.client.query<{ count: number }>(this.sql.pruneJobs, [finishedBefore, limit]);
    const pruned = Number(row?.count ?? 0);
    this.vacuums.noteChangedRows(pruned);
    return pruned;
  }

  registerSchema(entry: SchemaEntry): Promise<SchemaEntry> {
    return registerSchema(this.client, this.sql, entry);
  }

  listSchemas(name?: string): Promise<SchemaEntry[]> {
    return listSchemas(this.client, this.sql, name);
  }

  recordWorker(worker: WorkerPresence): Promise<void> {
    return recordWorker(this.client, this.sql, worker);
  }

  listWorkers(seenSince: Date): Promise<WorkerPresence[]> {
    return listWorkers(this.client, this.sql, seenSince);
  }

  /**
   * Runs the insert of `jobs` on `on` and resolves to the jobs it created. A batch with keys skips those
   * already taken and returns the ids it inserted; a batch without keys returns no rows: all of it was inserted.
   */
  private async insertNew(on: SqlQueryable, jobs: readonly NewJob[]): Promise<readonly NewJob[]> {
    const { text, params, withKeys } = this.insertStatement(jobs);
    const rows = await on.query<{ id: string }>(text, params);
    if (!withKeys) return jobs;
    const sent = new Map(jobs.map((job) => [job.id, job]));
    return rows.map(({ id }) => sent.get(id) as NewJob);
  }

  /**
   * The insert of `jobs`: skipping taken keys only when there are keys (and only then returning the ids it
   * created), sending shared settings once.
   */
  private insertStatement(jobs: readonly NewJob[]): SqlStatement & { withKeys: boolean } {
    const withKeys = jobs.some((job) => job.idempotencyKey !== null);
    const alike = shareSettings(jobs);
    const sql = this.sql;
    const [keyed, keyless] = alike
      ? [sql.insertAlikeJobs, sql.insertAlikeJobsWithoutKeys]
      : [sql.insertJobs, sql.insertJobsWithoutKeys];
    const text = withKeys ? keyed : keyless;
    return { text, params: newJobParams(jobs, alike), withKeys };
  }

  /**
   * The enqueue, claim, complete and handoff statements, run once on a new
   * connection (in a transaction that is rolled back), so the first jobs skip
   * its parses and catalog loads. Only the handoff inserts (with and without
   * an idempotency key) write rows: throwaway jobs with fresh ids and keys, so
   * connections warming at once do not wait on each other's uncommitted key.
   */
  warmUpStatements(): SqlStatement[] {
    const epoch = new Date(0);
    const throwaway: NewJob = {
      id: newJobId(),
      name: '',
      version: 1,
      payload: null,
      priority: 0,
      order: 'fifo',
      runAt: epoch,
      createdAt: epoch,
      maxAttempts: 1,
      backoff: { type: 'fixed', delayMs: 0 },
      leaseMs: 1,
      idempotencyKey: null,
      replayOf: null,
    };
    const claimNothing: ClaimRequest = {
      name: '',
      minVersion: 0,
      maxVersion: 0,
      limit: 0,
      leaseToken: '',
      workerId: '',
      leaseMs: null,
      now: epoch,
    };
    return [
      this.insertStatement([]),
      this.claimStatement(claimNothing),
      this.completeStatement([], epoch),
      this.insertAndClaimStatement(throwaway, claimNothing),
      this.insertAndClaimStatement({ ...throwaway, id: newJobId(), idempotencyKey: newJobId() }, claimNothing),
    ];
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      const vacuumed = this.vacuums.stop();
      await this.ownedNotifier?.close();
      await vacuumed;
      await this.client.close();
    })();
    return this.closing;
  }

  /** Vacuums the jobs table; resolves to its estimated rows. */
  private async vacuum(): Promise<number> {
    await this.client.query(this.sql.vacuumJobs);
    return this.estimateRows();
  }

  /** The jobs table's rows as the catalog last estimated them; 0 before any vacuum or analyze. */
  private async estimateRows(): Promise<number> {
    const [estimate] = await this.client.query<{ rows: number }>(this.sql.estimateJobRows);
    return Math.max(0, estimate?.rows ?? 0);
  }

  private async one(on: SqlQueryable, text: string, params: readonly unknown[]): Promise<JobRecord | null> {
    const [row] = await on.query<JobRow>(text, params);
    return row ? toJobRecord(row) : null;
  }
}
