import type {
  ChildrenPageQuery,
  ChildState,
  ClaimedRecord,
  ClaimRequest,
  ClosableNotifier,
  CompleteAndClaim,
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
  StoredState,
  StoreNotifier,
  SweptLease,
  WorkerPresence,
  WorkerRoom,
} from '../../engine/store.ts';
import { timedOutError } from '../../engine/timed-out-error.ts';
import type { JobError } from '../../jobs.ts';
import type { LeaderElection } from '../../roles/leadership.ts';
import { storeClosed } from '../shared/closed-store.ts';
import { handedRecord, insertedRecord } from '../shared/inserted-record.ts';
import { ParentReadiness } from '../shared/parent-readiness.ts';
import { completeAndClaimLimitedJobs, completeAndClaimStatement } from './complete-and-claim.ts';
import type { SqlClient, SqlQueryable, SqlStatement } from './connection.ts';
import { isTakenJobId } from './errors.ts';
import {
  buildFlowStatements,
  claimLimitedJobs,
  type FlowStatements,
  listQueueSettings,
  updateQueueSettings,
} from './flow-control.ts';
import {
  buildFlowJobStatements,
  type FlowJobStatements,
  insertFlow,
  listChildren,
  listChildStates,
  listHeldChildren,
  readiedParents,
  waitForChildren,
} from './flows.ts';
import { completeStatement, insertAndClaimStatement, warmUpStatements } from './hot-statements.ts';
import { debounceJobs, insertJobs } from './insert-jobs.ts';
import { createPgLeaderElection } from './leadership.ts';
import { buildListJobs } from './list-jobs.ts';
import { quoteSchema } from './migrations.ts';
import { moveJob } from './move-job.ts';
import { type JobRow, toJobRecord, toJsonText } from './records.ts';
import {
  listSchemas,
  listWorkers,
  pruneWorkers,
  recordWorker,
  registerSchema,
  removeSchema,
  touchWorkers,
} from './registries.ts';
import { postgresSchedules } from './schedules.ts';
import { type ClaimedRow, claimJobsSql, claimStatement, toClaimedRecord } from './sql/claim-jobs.ts';
import { buildStatements, type Statements } from './statements.ts';
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

/**
 * The PostgreSQL store, over any `SqlClient` (node-postgres or PGlite). Each
 * operation is one statement, except `moveJob`, which is one transaction.
 * No transaction is held while a job runs: a lease is a token and an expiry.
 */
export class PostgresStore implements Store {
  readonly kind: string;
  readonly notifier?: StoreNotifier;
  readonly leadership: LeaderElection;
  readonly handoff: Handoff;
  readonly completeAndClaim: CompleteAndClaim;
  private readonly client: SqlClient;
  private readonly quotedSchema: string;
  private readonly sql: Statements;
  /** The plain claim's statement, through `claim_jobs` or its guard `claim_jobs_unless_held` (sql/claim-jobs.ts). */
  private readonly claimSql: { plain: string; unlessHeld: string };
  private readonly flowSql: FlowStatements;
  private readonly completeAndClaimSql: string;
  private readonly ownedNotifier: ClosableNotifier | undefined;
  private closing: Promise<void> | undefined;
  private readonly vacuums: VacuumPacer;
  private readonly flowJobSql: FlowJobStatements;
  private readonly readiness = new ParentReadiness();
  private readonly schedules: ScheduleStore;

  constructor(options: PostgresStoreInit) {
    this.kind = options.kind;
    this.client = options.client;
    this.quotedSchema = quoteSchema(options.schema);
    this.sql = buildStatements(this.quotedSchema);
    this.claimSql = {
      plain: claimJobsSql(this.quotedSchema, false),
      unlessHeld: claimJobsSql(this.quotedSchema, true),
    };
    this.flowSql = buildFlowStatements(this.quotedSchema);
    this.completeAndClaimSql = completeAndClaimStatement(this.quotedSchema);
    this.flowJobSql = buildFlowJobStatements(this.quotedSchema);
    this.ownedNotifier = options.notifier;
    this.handoff = { insertAndClaimJob: (job, claim) => this.insertAndClaimJob(job, claim) };
    this.completeAndClaim = {
      completeAndClaimLimitedJobs: (jobs, request) => this.completeAndClaimLimitedJobs(jobs, request),
    };
    this.leadership = createPgLeaderElection(this.client, this.quotedSchema);
    this.schedules = postgresSchedules(this.client, this.quotedSchema);
    if (options.notifier) this.notifier = options.notifier;
    this.vacuums = new VacuumPacer(
      options.vacuumEveryRows ?? 0,
      () => this.vacuum(),
      () => this.estimateRows(),
    );
  }

  insertJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
    return insertJobs(this.client, this.sql, jobs);
  }

  debounceJobs(jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
    return debounceJobs(this.client, this.sql, jobs);
  }

  async claimJobs(request: ClaimRequest): Promise<ClaimedRecord[]> {
    if (request.limit <= 0) return [];
    const { text, params } = claimStatement(this.claimSql.plain, request);
    const rows = await this.client.query<ClaimedRow>(text, params);
    this.vacuums.noteChangedRows(rows.length);
    return rows.map((row) => toClaimedRecord(row, request));
  }

  listQueueSettings(name?: string): Promise<QueueSettings[]> {
    return listQueueSettings(this.client, this.flowSql, name);
  }

  updateQueueSettings(name: string, change: QueueSettingsChange, now: Date): Promise<QueueSettings | null> {
    return updateQueueSettings(this.client, this.flowSql, name, change, now);
  }

  /** One statement, through `claim_jobs_unless_held` (sql/claim-jobs.ts). */
  async claimJobsUnlessHeld(request: ClaimRequest): Promise<ClaimedRecord[] | null> {
    if (request.limit <= 0) return [];
    const { text, params } = claimStatement(this.claimSql.unlessHeld, request);
    const rows = await this.client.query<ClaimedRow>(text, params);
    // The row without an id: the type's settings held the claim back.
    if (rows[0] && rows[0].id === null) return null;
    this.vacuums.noteChangedRows(rows.length);
    return rows.map((row) => toClaimedRecord(row, request));
  }

  async claimLimitedJobs(request: ClaimRequest): Promise<LimitedClaim> {
    const claimed = await claimLimitedJobs(this.client, this.flowSql, request);
    this.vacuums.noteChangedRows(claimed.jobs.length);
    return claimed;
  }

  /** `CompleteAndClaim`, in one statement (see complete-and-claim.ts). */
  private async completeAndClaimLimitedJobs(
    jobs: readonly (LeaseRef & { result: unknown })[],
    request: ClaimRequest,
  ): Promise<{ completed: string[]; claim: LimitedClaim }> {
    const { completed, claim, readied } = await completeAndClaimLimitedJobs(
      this.client,
      this.completeAndClaimSql,
      jobs,
      request,
    );
    this.vacuums.noteChangedRows(completed.length + claim.jobs.length);
    this.readiness.tell(readied);
    return { completed, claim };
  }

  /** `Handoff`, in one statement (see `insertAndClaimJobSql`). */
  private async insertAndClaimJob(
    job: NewJob,
    claim: ClaimRequest,
  ): Promise<{ job: JobRecord; claimed: ClaimedRecord | null } | null> {
    const { text, params } = insertAndClaimStatement(this.sql, job, claim);
    let row: { state: StoredState } | undefined;
    try {
      [row] = await this.client.query<{ state: StoredState }>(text, params);
    } catch (error) {
      // Its id is taken: the engine inserts it as usual, which answers with the job holding it.
      if (isTakenJobId(error)) return null;
      throw error;
    }
    // Only a keyed insert returns no row: its key was taken.
    if (!row) return null;
    if (row.state !== 'active') return { job: insertedRecord(job), claimed: null };
    const handed = handedRecord(job, claim);
    return { job: handed, claimed: handed };
  }

  async completeJobs(jobs: readonly (LeaseRef & { result: unknown })[], now: Date): Promise<string[]> {
    if (jobs.length === 0) return [];
    const { text, params } = completeStatement(this.sql, jobs, now);
    const rows = await this.client.query<{ id: string; readied: string | null }>(text, params);
    this.vacuums.noteChangedRows(rows.length);
    this.readiness.tell(readiedParents(rows));
    return rows.map((row) => row.id);
  }

  async releaseJobs(leases: readonly LeaseRef[], now: Date): Promise<string[]> {
    if (leases.length === 0) return [];
    const ids = leases.map((lease) => lease.id);
    const tokens = leases.map((lease) => lease.leaseToken);
    const rows = await this.client.query<{ id: string }>(this.sql.releaseJobs, [ids, tokens, now]);
    this.vacuums.noteChangedRows(rows.length);
    return rows.map((row) => row.id);
  }

  async failJob(lease: LeaseRef, outcome: { error: JobError; retryAt: Date | null }, now: Date): Promise<boolean> {
    const values = [lease.id, lease.leaseToken, outcome.retryAt, toJsonText(outcome.error), now];
    const rows = await this.client.query<{ readied: string | null }>(this.sql.failJob, values);
    this.readiness.tell(readiedParents(rows));
    return rows.length === 1;
  }

  async snoozeJob(lease: LeaseRef, runAt: Date, now: Date): Promise<boolean> {
    return this.changed(this.sql.snoozeJob, [lease.id, lease.leaseToken, runAt, now]);
  }

  async extendLease(lease: LeaseRef, leaseExpiresAt: Date, now: Date): Promise<Date | null> {
    const params = [lease.id, lease.leaseToken, leaseExpiresAt, now];
    const [row] = await this.client.query<{ lease_expires_at: Date }>(this.sql.extendLease, params);
    return row?.lease_expires_at ?? null;
  }

  async recordProgress(lease: LeaseRef, progress: number, now: Date): Promise<boolean> {
    return this.changed(this.sql.recordProgress, [lease.id, lease.leaseToken, progress, now]);
  }

  async updatePayload(lease: LeaseRef, change: { payload: unknown; version: number }, now: Date): Promise<boolean> {
    const values = [lease.id, lease.leaseToken, toJsonText(change.payload), change.version, now];
    return this.changed(this.sql.updatePayload, values);
  }

  /** One transaction (see `moveJob` in move-job.ts). */
  moveJob(lease: LeaseRef, next: NewJob, now: Date): Promise<InsertOutcome | null> {
    return moveJob(this.client, this.sql, lease, next, now, (names) => this.readiness.tell(names));
  }

  async cancelJob(id: string, now: Date): Promise<JobRecord | null> {
    const rows = await this.client.query<JobRow & { readied: string | null }>(this.sql.cancelJob, [id, now]);
    if (rows[0]) this.vacuums.noteChangedRows(1);
    this.readiness.tell(readiedParents(rows));
    return rows[0] ? toJobRecord(rows[0]) : null;
  }

  async promoteJob(id: string, now: Date): Promise<JobRecord | null> {
    return this.changedOne(this.sql.promoteJob, [id, now]);
  }

  async rerunCompletedJob(id: string, now: Date): Promise<JobRecord | null> {
    return this.changedOne(this.sql.rerunCompletedJob, [id, now]);
  }

  async restoreCancelledJob(id: string, now: Date): Promise<JobRecord | null> {
    return this.changedOne(this.sql.restoreCancelledJob, [id, now]);
  }

  async removeJobByKey(name: string, key: string): Promise<JobRecord | null> {
    return this.changedOne(this.sql.removeJobByKey, [name, key]);
  }

  async getJob(id: string, read: JobRead = {}): Promise<JobRecord | null> {
    return this.one(this.client, this.sql.getJob(read), [id]);
  }

  /** One statement, or a transaction when a key or an id is taken (see `insertFlow` in flows.ts). */
  insertFlow(jobs: readonly NewJob[]): Promise<InsertOutcome> {
    return insertFlow(this.client, { jobs: this.sql, flows: this.flowJobSql }, jobs);
  }

  /** One statement (see `waitForChildren` in flows.ts). */
  waitForChildren(lease: LeaseRef, children: readonly NewJob[], now: Date): Promise<boolean> {
    return waitForChildren(this.client, this.flowJobSql, lease, children, now);
  }

  listChildren(parentId: string, page: ChildrenPageQuery): Promise<JobRecord[]> {
    return listChildren(this.client, this.flowJobSql, parentId, page);
  }

  listChildStates(parentId: string, page: { afterId?: string; limit: number }): Promise<ChildState[]> {
    return listChildStates(this.client, this.flowJobSql, parentId, page);
  }

  listHeldChildren(lease: LeaseRef, page: ChildrenPageQuery, now: Date): Promise<HeldChildrenPage | null> {
    return listHeldChildren(this.client, this.flowJobSql, lease, page, now);
  }

  onParentsReady(listener: (names: readonly string[]) => void): () => void {
    return this.readiness.subscribe(listener);
  }

  async ping(): Promise<void> {
    if (this.closing) throw storeClosed(this.kind);
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

  async requeueExpiredLeases(now: Date, error: Omit<JobError, 'attempt'>): Promise<SweptLease[]> {
    const rows = await this.client.query<{
      id: string;
      name: string;
      version: number;
      attempts: number;
      dead: boolean;
      parent_id: string | null;
      timed_out: boolean;
      readied: string | null;
    }>(this.sql.requeueExpiredLeases, [
      now,
      toJsonText({ ...error, attempt: 0 }),
      toJsonText({ ...timedOutError(error), attempt: 0 }),
    ]);
    this.readiness.tell(readiedParents(rows));
    return rows.map(({ id, name, version, attempts, dead, parent_id, timed_out }) => {
      const swept: SweptLease = { id, name, version, attempt: attempts, dead };
      if (parent_id !== null) swept.parentId = parent_id;
      if (timed_out) swept.timedOut = true;
      return swept;
    });
  }

  async pruneJobs(finishedBefore: Date, limit: number, now: Date): Promise<number> {
    if (limit <= 0) return 0;
    const [row] = await this.client.query<{ count: number }>(this.sql.pruneJobs, [finishedBefore, limit, now]);
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

  removeSchema(name: string, version: number): Promise<boolean> {
    return removeSchema(this.client, this.sql, name, version);
  }

  recordWorker(worker: WorkerPresence, room: WorkerRoom): Promise<boolean> {
    return recordWorker(this.client, this.sql, worker, room);
  }

  pruneWorkers(seenBefore: Date): Promise<number> {
    return pruneWorkers(this.client, this.sql, seenBefore);
  }

  listWorkers(seenSince: Date): Promise<WorkerPresence[]> {
    return listWorkers(this.client, this.sql, seenSince);
  }

  touchWorkers(ids: readonly string[], seenAt: Date): Promise<void> {
    return touchWorkers(this.client, this.sql, ids, seenAt);
  }

  upsertSchedule(schedule: StoredSchedule): Promise<void> {
    return this.schedules.upsertSchedule(schedule);
  }

  removeSchedule(key: string): Promise<boolean> {
    return this.schedules.removeSchedule(key);
  }

  listSchedules(): Promise<StoredSchedule[]> {
    return this.schedules.listSchedules();
  }

  recordScheduleRun(run: ScheduleRun): Promise<void> {
    return this.schedules.recordScheduleRun(run);
  }

  listScheduleRuns(keys: readonly string[]): Promise<ScheduleRun[]> {
    return this.schedules.listScheduleRuns(keys);
  }

  /** The statements of every job's way, run once on each new connection (see `warmUpStatements`). */
  warmUpStatements(): SqlStatement[] {
    return warmUpStatements(this.sql, this.claimSql.unlessHeld);
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

  /** Runs a fenced single-row update; resolves to whether it changed the row (the lease held). */
  private async changed(text: string, params: readonly unknown[]): Promise<boolean> {
    return (await this.client.query(text, params)).length === 1;
  }

  /** `one`, counting the row it returns as changed for the vacuum pacer. */
  private async changedOne(text: string, params: readonly unknown[]): Promise<JobRecord | null> {
    const changed = await this.one(this.client, text, params);
    if (changed) this.vacuums.noteChangedRows(1);
    return changed;
  }

  private async one(on: SqlQueryable, text: string, params: readonly unknown[]): Promise<JobRecord | null> {
    const [row] = await on.query<JobRow>(text, params);
    return row ? toJobRecord(row) : null;
  }
}
