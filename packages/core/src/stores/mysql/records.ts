import type { RowDataPacket, TypeCast } from 'mysql2/promise';
import type { Backoff, JobOrder } from '../../contract/types.ts';
import type {
  ChildOutcome,
  ChildState,
  ClaimedRecord,
  ClaimRequest,
  JobRead,
  JobRecord,
  NewJob,
} from '../../engine/store.ts';
import type { ChildFailurePolicy, JobError, TraceContext } from '../../jobs.ts';
import { withFlowFields } from '../shared/flow-records.ts';
import { leaseExpiry } from '../shared/inserted-record.ts';
import { engineState, type KeptState, notStartedState } from '../shared/not-started.ts';
import { isUnread, perRead } from '../shared/unread-columns.ts';

/** The columns of the jobs table, in the order `jobRow` reads and `newJobValues` writes them. */
export const JOB_COLUMNS = [
  'id',
  'name',
  'version',
  'payload',
  'state',
  'priority',
  'job_order',
  'order_key',
  'tie_key',
  'run_at',
  'created_at',
  'updated_at',
  'attempts',
  'max_attempts',
  'backoff',
  'lease_ms',
  'lease_token',
  'lease_expires_at',
  'worker_id',
  'progress',
  'result',
  'error',
  'idempotency_key',
  'finished_at',
  'moved_to',
  'replay_of',
  'delayed_until',
  'trace_context',
  'idempotency_expires_at',
  'debounce_key',
  'job_group',
  'moved_from',
  'errors',
  'parent_id',
  'on_failure',
  'child_count',
  'pending_children',
  'idempotency_until_finished',
  'timeout_ms',
  'attempt_deadline',
] as const;

/** A job's own retention, written only by an insert of jobs that have one (`insertColumns`). */
const RETENTION_COLUMNS = ['retain_completed_ms', 'retain_dead_ms'] as const;

/**
 * The select list of job rows, of the table read under `alias` when given; each column `read` leaves unread
 * selected as `NULL`.
 */
export const jobSelectOf = (alias: string | undefined, read: JobRead = {}) =>
  [...JOB_COLUMNS, ...RETENTION_COLUMNS]
    .map((column) => (isUnread(column, read) ? `NULL AS ${column}` : alias ? `${alias}.${column}` : column))
    .join(', ');

/** The select list for whole job rows. */
export const JOB_SELECT = jobSelectOf(undefined);

/** The select list a read of jobs uses: `JOB_SELECT`, with the values `read` leaves unread as `NULL`. */
export const jobSelectFor = perRead((read) => jobSelectOf(undefined, read));

/**
 * The columns and rows of an `INSERT … (columns) VALUES ?` of `jobs`: `JOB_COLUMNS` (`newJobValues`), and the
 * retention columns only when a job of them has a retention of its own, so the usual insert sends no more.
 */
export function insertColumns(jobs: readonly NewJob[]): { columns: string; rows: unknown[][] } {
  const rows = jobs.map(newJobValues);
  if (!jobs.some((job) => job.retainCompletedMs != null || job.retainDeadMs != null)) {
    return { columns: JOB_COLUMNS.join(', '), rows };
  }
  for (const [i, job] of jobs.entries()) rows[i]?.push(job.retainCompletedMs ?? null, job.retainDeadMs ?? null);
  return { columns: [...JOB_COLUMNS, ...RETENTION_COLUMNS].join(', '), rows };
}

/** A date as a DATETIME(3) literal in UTC, independent of the pool's `timezone` setting. */
export function sqlDate(date: Date): string {
  return date.toISOString().slice(0, 23).replace('T', ' ');
}

/**
 * Reads DATETIME columns as text, so rows parse the same whatever `timezone`
 * or `dateStrings` the pool was created with; `readDate` makes them UTC dates.
 */
export const datesAsText: TypeCast = (field, next) =>
  field.type === 'DATETIME' || field.type === 'DATETIME2' ? field.string() : next();

/** A DATETIME(3) value read as text (see `datesAsText`), as a UTC date. */
export function readDate(value: unknown): Date {
  if (value instanceof Date) return value;
  return new Date(`${String(value).replace(' ', 'T')}Z`);
}

function readNullableDate(value: unknown): Date | null {
  return value === null || value === undefined ? null : readDate(value);
}

function readText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

function readJson(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' || Buffer.isBuffer(value) ? JSON.parse(value.toString()) : value;
}

/** A JSON value as stored text; `undefined` is stored as `null`. */
export function writeJson(value: unknown): string {
  return JSON.stringify(value ?? null);
}

type StoredJobError = Omit<JobError, 'at'> & { at: string };

function readError(value: unknown): JobError | null {
  const error = readJson(value) as StoredJobError | null;
  return error === null ? null : { ...error, at: new Date(error.at) };
}

/** `errors`, or on a job whose `errors` is null (stored before pre-release step 17), its last `error` alone. */
function readErrors(value: unknown, last: JobError | null): JobError[] {
  const errors = readJson(value) as StoredJobError[] | null;
  if (errors === null) return last === null ? [] : [last];
  return errors.map((error) => ({ ...error, at: new Date(error.at) }));
}

/** The claim order key: run time for `fifo`, its negation for `lifo`, so one ascending index serves both. */
export function orderKey(order: JobOrder, runAt: Date): number {
  return order === 'lifo' ? -runAt.getTime() : runAt.getTime();
}

const HEX_COMPLEMENT: Record<string, string> = Object.fromEntries(
  [...'0123456789abcdef'].map((digit, i) => [digit, (15 - i).toString(16)]),
);

/**
 * Breaks ties of priority and order key by creation: the id (UUIDv7, time
 * ordered) for `fifo`, its hex complement, which sorts in reverse, for `lifo`.
 */
export function tieKey(order: JobOrder, id: string): string {
  if (order === 'fifo') return id;
  return [...id.toLowerCase()].map((char) => HEX_COMPLEMENT[char] ?? char).join('');
}

/** `delayed_until` of a job in `state`: its run time while it is delayed, else null. */
export function delayedUntil(state: string, runAt: Date): string | null {
  return state === 'delayed' ? sqlDate(runAt) : null;
}

/** Stored states of a job not yet started, as an SQL list. */
export const NOT_STARTED_SQL = `('delayed', 'waiting')`;

/** SQL for the order key of a row whose `run_at` becomes the parameter (milliseconds). */
export const ORDER_KEY_SQL = `IF(job_order = 'lifo', -?, ?)`;

/** A row's time limit (`timeout_ms`), or `null` for a job without one. */
export function timeoutOf(row: RowDataPacket): number | null {
  return row.timeout_ms === null || row.timeout_ms === undefined ? null : Number(row.timeout_ms);
}

/**
 * What `claim` hands a worker of a row `claimCandidatesSql` locked, once the claim's update has leased it
 * (`attempts` counted, the lease set); the update changes nothing else it reads. The name is the claim's.
 */
export function claimedRecord(row: RowDataPacket, claim: ClaimRequest): ClaimedRecord {
  const leaseMs = Number(row.lease_ms);
  const timeoutMs = timeoutOf(row);
  const claimed: ClaimedRecord = {
    id: String(row.id),
    name: claim.name,
    version: Number(row.version),
    payload: readJson(row.payload),
    attempts: Number(row.attempts) + 1,
    maxAttempts: Number(row.max_attempts),
    leaseMs,
    leaseToken: claim.leaseToken,
    leaseExpiresAt: leaseExpiry({ leaseMs, timeoutMs }, claim),
    progress: Number(row.progress),
    runAt: readDate(row.run_at),
    traceContext: readJson(row.trace_context) as TraceContext | null,
  };
  if (timeoutMs !== null) claimed.timeoutMs = timeoutMs;
  // A parent resumed after its children (`ClaimedRecord.childCount`); other jobs leave it out.
  const children = Number(row.child_count ?? 0);
  if (children > 0) claimed.childCount = children;
  // A child, whose events name its parent (`ClaimedRecord.parentId`).
  if (row.parent_id !== null && row.parent_id !== undefined) claimed.parentId = String(row.parent_id);
  return claimed;
}

/** A child as `listChildStates` selects it: `id`, `name`, `state`, `run_at`. */
export function childStateRow(row: RowDataPacket): ChildState {
  return {
    id: String(row.id),
    name: String(row.name),
    state: engineState(String(row.state) as KeptState),
    runAt: readDate(row.run_at),
  };
}

/** A child as `listHeldChildren` selects it: `id`, `name`, `state`, `run_at`, `result`, `error`, `child_count`. */
export function childOutcomeRow(row: RowDataPacket): ChildOutcome {
  return {
    ...childStateRow(row),
    result: readJson(row.result),
    error: readError(row.error),
    childCount: Number(row.child_count ?? 0),
  };
}

export function jobRow(row: RowDataPacket): JobRecord {
  const error = readError(row.error);
  const record = fieldsOf(row, error);
  if (Number(row.idempotency_until_finished ?? 0) === 1) record.idempotencyUntilFinished = true;
  if (row.timeout_ms !== null && row.timeout_ms !== undefined) {
    record.timeoutMs = Number(row.timeout_ms);
    record.attemptDeadline = readNullableDate(row.attempt_deadline);
  }
  return withFlowFields(record, {
    parentId: readText(row.parent_id),
    onFailure: readText(row.on_failure) as ChildFailurePolicy | null,
    childCount: Number(row.child_count ?? 0),
    pendingChildren: Number(row.pending_children ?? 0),
  });
}

/** The fields every job has, of a jobs-table row. */
function fieldsOf(row: RowDataPacket, error: JobError | null): JobRecord {
  const record: JobRecord = {
    id: String(row.id),
    name: String(row.name),
    version: Number(row.version),
    payload: readJson(row.payload),
    state: engineState(String(row.state) as KeptState),
    priority: Number(row.priority),
    order: String(row.job_order) as JobOrder,
    runAt: readDate(row.run_at),
    createdAt: readDate(row.created_at),
    updatedAt: readDate(row.updated_at),
    attempts: Number(row.attempts),
    maxAttempts: Number(row.max_attempts),
    backoff: readJson(row.backoff) as Backoff,
    leaseMs: Number(row.lease_ms),
    leaseToken: readText(row.lease_token),
    leaseExpiresAt: readNullableDate(row.lease_expires_at),
    workerId: readText(row.worker_id),
    progress: Number(row.progress),
    result: readJson(row.result),
    error,
    errors: readErrors(row.errors, error),
    idempotencyKey: readText(row.idempotency_key),
    idempotencyExpiresAt: readNullableDate(row.idempotency_expires_at),
    debounceKey: readText(row.debounce_key),
    finishedAt: readNullableDate(row.finished_at),
    movedTo: readText(row.moved_to),
    movedFrom: readText(row.moved_from),
    replayOf: readText(row.replay_of),
    traceContext: readJson(row.trace_context) as TraceContext | null,
    group: readText(row.job_group),
  };
  // A retention of its own only on a job that has one, as `insertedRecord` gives it.
  if (row.retain_completed_ms != null || row.retain_dead_ms != null) {
    record.retainCompletedMs = row.retain_completed_ms == null ? null : Number(row.retain_completed_ms);
    record.retainDeadMs = row.retain_dead_ms == null ? null : Number(row.retain_dead_ms);
  }
  return record;
}

/**
 * One row of values for `INSERT … (JOB_COLUMNS) VALUES ?`: a new job, not started, or, inserted with children
 * (`pendingChildren` above 0), `waiting-children`.
 */
export function newJobValues(job: NewJob): unknown[] {
  const children = job.pendingChildren ?? 0;
  const values: Record<(typeof JOB_COLUMNS)[number], unknown> = {
    id: job.id,
    name: job.name,
    version: job.version,
    payload: writeJson(job.payload),
    state: children > 0 ? 'waiting-children' : notStartedState(job.runAt, job.createdAt),
    priority: job.priority,
    job_order: job.order,
    order_key: orderKey(job.order, job.runAt),
    tie_key: tieKey(job.order, job.id),
    run_at: sqlDate(job.runAt),
    created_at: sqlDate(job.createdAt),
    updated_at: sqlDate(job.createdAt),
    attempts: 0,
    max_attempts: job.maxAttempts,
    backoff: writeJson(job.backoff),
    lease_ms: job.leaseMs,
    lease_token: null,
    lease_expires_at: null,
    worker_id: null,
    progress: 0,
    result: null,
    error: null,
    idempotency_key: job.idempotencyKey,
    finished_at: null,
    moved_to: null,
    replay_of: job.replayOf,
    delayed_until: children > 0 ? null : delayedUntil(notStartedState(job.runAt, job.createdAt), job.runAt),
    trace_context: job.traceContext === null ? null : writeJson(job.traceContext),
    idempotency_expires_at: job.idempotencyExpiresAt === null ? null : sqlDate(job.idempotencyExpiresAt),
    debounce_key: job.debounceKey,
    job_group: job.group ?? null,
    moved_from: job.movedFrom ?? null,
    errors: null,
    parent_id: job.parentId ?? null,
    on_failure: job.onFailure ?? null,
    child_count: children,
    pending_children: children,
    idempotency_until_finished: job.idempotencyUntilFinished ? 1 : 0,
    timeout_ms: job.timeoutMs ?? null,
    attempt_deadline: null,
  };
  return JOB_COLUMNS.map((column) => values[column]);
}
