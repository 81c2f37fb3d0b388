import type { Backoff, JobOrder } from '../../contract/types.ts';
import type { ChildOutcome, JobRead, JobRecord, NewJob } from '../../engine/store.ts';
import type { ChildFailurePolicy, JobError } from '../../jobs.ts';
import { CLAIMED_JOB_COLUMNS } from '../shared/claimed-columns.ts';
import { engineState, type KeptState } from '../shared/not-started.ts';
import { isUnread, perRead } from '../shared/unread-columns.ts';

const OTHER_FIELDS = [
  'name',
  'priority',
  'job_order',
  'lease_token',
  'lease_expires_at',
  'attempt_deadline',
  'state',
  'created_at',
  'updated_at',
  'backoff',
  'worker_id',
  'result',
  'error',
  'errors',
  'idempotency_key',
  'idempotency_expires_at',
  'idempotency_until_finished',
  'debounce_key',
  'finished_at',
  'moved_to',
  'moved_from',
  'replay_of',
  'job_group',
  'parent_id',
  'on_failure',
  'child_count',
  'pending_children',
  'retain_completed_ms',
  'retain_dead_ms',
] as const;

/** `fields` of the table aliased `j`, each one `read` leaves unread as `NULL`. */
const selectList = (fields: readonly string[], read: JobRead = {}) =>
  fields.map((field) => (isUnread(field, read) ? `NULL::jsonb AS ${field}` : `j.${field}`)).join(', ');

const JOB_FIELDS = [...CLAIMED_JOB_COLUMNS, ...OTHER_FIELDS];

/** The columns of a job, as every other statement returns them (the table is aliased `j`). */
export const JOB_COLUMNS = selectList(JOB_FIELDS);

/** The columns a read of jobs returns: `JOB_COLUMNS`, with the values `read` leaves unread as `NULL`. */
export const jobColumnsFor = perRead((read) => selectList(JOB_FIELDS, read));

/** A job error as jsonb holds it: its time as text. */
type StoredJobError = Omit<JobError, 'at'> & { at: string };

function readError(error: StoredJobError): JobError {
  return { ...error, at: new Date(error.at) };
}

/** A `jobs` row as the drivers return it. */
export interface JobRow {
  id: string;
  name: string;
  version: number;
  payload: unknown;
  /** `delayed`: a `waiting` job stored outside the claim index until it is due. */
  state: KeptState;
  priority: number;
  job_order: JobOrder;
  run_at: Date;
  created_at: Date;
  updated_at: Date;
  attempts: number;
  max_attempts: number;
  backoff: Backoff;
  /** bigint: node-postgres returns a string, PGlite a number. */
  lease_ms: string | number;
  /** bigint, as `lease_ms`; `NULL`: no time limit. */
  timeout_ms: string | number | null;
  attempt_deadline: Date | null;
  lease_token: string | null;
  lease_expires_at: Date | null;
  worker_id: string | null;
  progress: number;
  result: unknown;
  error: StoredJobError | null;
  /** `null` on a job stored before the column existed (pre-release schema version 24). */
  errors: StoredJobError[] | null;
  idempotency_key: string | null;
  idempotency_expires_at: Date | null;
  idempotency_until_finished: boolean;
  debounce_key: string | null;
  finished_at: Date | null;
  moved_to: string | null;
  moved_from: string | null;
  replay_of: string | null;
  job_group: string | null;
  trace_context: Record<string, string> | null;
  parent_id: string | null;
  on_failure: ChildFailurePolicy | null;
  child_count: number;
  pending_children: number;
  /** bigint: node-postgres returns a string, PGlite a number. */
  retain_completed_ms: string | number | null;
  retain_dead_ms: string | number | null;
}

/** A child's row as `listHeldChildrenSql` selects it. */
export type ChildRow = Pick<JobRow, 'id' | 'name' | 'state' | 'run_at' | 'result' | 'error' | 'child_count'>;

export function toChildOutcome(row: ChildRow): ChildOutcome {
  return {
    id: row.id,
    name: row.name,
    state: engineState(row.state),
    runAt: row.run_at,
    result: row.result ?? null,
    error: row.error === null ? null : readError(row.error),
    childCount: row.child_count,
  };
}

export function toJobRecord(row: JobRow): JobRecord {
  const record: JobRecord = {
    id: row.id,
    name: row.name,
    version: row.version,
    payload: row.payload,
    priority: row.priority,
    order: row.job_order,
    runAt: row.run_at,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    leaseMs: Number(row.lease_ms),
    leaseToken: row.lease_token,
    leaseExpiresAt: row.lease_expires_at,
    progress: row.progress,
    state: engineState(row.state),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    backoff: row.backoff,
    workerId: row.worker_id,
    result: row.result ?? null,
    error: row.error === null ? null : readError(row.error),
    errors: row.errors === null ? (row.error === null ? [] : [readError(row.error)]) : row.errors.map(readError),
    idempotencyKey: row.idempotency_key,
    idempotencyExpiresAt: row.idempotency_expires_at,
    debounceKey: row.debounce_key,
    finishedAt: row.finished_at,
    movedTo: row.moved_to,
    movedFrom: row.moved_from,
    replayOf: row.replay_of,
    group: row.job_group,
    traceContext: row.trace_context,
  };
  // Flows' fields only on jobs in a flow: a plain job reads back as it was inserted (see `insertedRecord`).
  if (row.idempotency_until_finished) record.idempotencyUntilFinished = true;
  if (row.timeout_ms !== null) {
    record.timeoutMs = Number(row.timeout_ms);
    record.attemptDeadline = row.attempt_deadline;
  }
  if (row.parent_id !== null) {
    record.parentId = row.parent_id;
    record.onFailure = row.on_failure;
  }
  if (row.child_count > 0) {
    record.childCount = row.child_count;
    record.pendingChildren = row.pending_children;
  }
  // A retention of its own only on a job that has one, as `insertedRecord` gives it.
  if (row.retain_completed_ms != null || row.retain_dead_ms != null) {
    record.retainCompletedMs = row.retain_completed_ms == null ? null : Number(row.retain_completed_ms);
    record.retainDeadMs = row.retain_dead_ms == null ? null : Number(row.retain_dead_ms);
  }
  return record;
}

/** A JSON value as text for a `jsonb` parameter; `undefined` is stored as JSON `null`. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value ?? null);
}

/** The fields of a new job that differ from job to job; the others are its settings. */
export const PER_JOB_FIELDS = ['id', 'payload', 'idempotency_key', 'trace_context', 'job_group'] as const;

/** The other fields of a new job: its settings, usually the same for every job of a batch. */
export const SETTINGS_FIELDS = [
  'name',
  'version',
  'priority',
  'job_order',
  'run_at',
  'created_at',
  'max_attempts',
  'backoff',
  'lease_ms',
  'replay_of',
  'idempotency_expires_at',
  'idempotency_until_finished',
  'retain_completed_ms',
  'retain_dead_ms',
  'timeout_ms',
] as const;

/** The fields an insert sends for each new job. */
export const NEW_JOB_FIELDS = [...PER_JOB_FIELDS, ...SETTINGS_FIELDS] as const;

export type NewJobField = (typeof NEW_JOB_FIELDS)[number];
export type SettingsField = (typeof SETTINGS_FIELDS)[number];

function settingsOf(job: NewJob): (string | null)[] {
  return [
    job.name,
    String(job.version),
    String(job.priority),
    job.order,
    job.runAt.toISOString(),
    job.createdAt.toISOString(),
    String(job.maxAttempts),
    toJsonText(job.backoff),
    String(job.leaseMs),
    job.replayOf,
    job.idempotencyExpiresAt?.toISOString() ?? null,
    job.idempotencyUntilFinished ? 'true' : 'false',
    msText(job.retainCompletedMs),
    msText(job.retainDeadMs),
    job.timeoutMs == null ? null : String(job.timeoutMs),
  ];
}

/** A retention time as text for its `bigint` column, or SQL `NULL` for none. */
function msText(ms: number | null | undefined): string | null {
  return ms == null ? null : String(ms);
}

function sameSettings(a: NewJob, b: NewJob): boolean {
  return (
    a.name === b.name &&
    a.version === b.version &&
    a.priority === b.priority &&
    a.order === b.order &&
    a.runAt.getTime() === b.runAt.getTime() &&
    a.createdAt.getTime() === b.createdAt.getTime() &&
    a.maxAttempts === b.maxAttempts &&
    a.backoff.type === b.backoff.type &&
    a.backoff.delayMs === b.backoff.delayMs &&
    a.backoff.maxDelayMs === b.backoff.maxDelayMs &&
    a.leaseMs === b.leaseMs &&
    a.replayOf === b.replayOf &&
    a.idempotencyExpiresAt?.getTime() === b.idempotencyExpiresAt?.getTime() &&
    (a.idempotencyUntilFinished ?? false) === (b.idempotencyUntilFinished ?? false) &&
    (a.retainCompletedMs ?? null) === (b.retainCompletedMs ?? null) &&
    (a.retainDeadMs ?? null) === (b.retainDeadMs ?? null) &&
    (a.timeoutMs ?? null) === (b.timeoutMs ?? null)
  );
}

/** Whether every job of a batch (vacuously, of an empty one) has the first one's settings, as jobs enqueued together usually do. */
export function shareSettings(jobs: readonly NewJob[]): boolean {
  const [first] = jobs;
  return first === undefined || jobs.every((job) => sameSettings(job, first));
}

/** A job's trace context as JSON text for its `jsonb` column, or SQL `NULL` for none. */
export function traceContextText(job: NewJob): string | null {
  return job.traceContext === null ? null : JSON.stringify(job.traceContext);
}

/** One new job's insert values as text, in `NEW_JOB_FIELDS` order. */
export function newJobValues(job: NewJob): (string | null)[] {
  return [
    job.id,
    toJsonText(job.payload),
    job.idempotencyKey,
    traceContextText(job),
    job.group ?? null,
    ...settingsOf(job),
  ];
}

/**
 * Insert parameters: one array per field in `NEW_JOB_FIELDS` order, for an
 * `unnest(...)` insert (one fixed statement whatever the batch size, and no
 * driver-specific array typing: every value goes as text, and the statement
 * types each parameter, as `arrayParam` in statements.ts says).
 * With `alike` (see `shareSettings`), the settings are sent once as scalars,
 * after the per-job arrays: 5 values per job to encode and parse instead of 16.
 * A field no job of the batch has (usually the idempotency key, trace context,
 * group and retention) goes as one SQL `NULL` rather than an array of them: `unnest`
 * pads a `NULL` array with `NULL`s to the length of the others (the ids,
 * never `NULL`), so the usual batch sends 2 values per job.
 */
export function newJobParams(jobs: readonly NewJob[], alike: boolean): (string | null | (string | null)[])[] {
  const perJob = [
    jobs.map((job) => job.id),
    jobs.map((job) => toJsonText(job.payload)),
    unlessAllNull(jobs, (job) => job.idempotencyKey),
    unlessAllNull(jobs, traceContextText),
    unlessAllNull(jobs, (job) => job.group ?? null),
  ];
  const [first] = jobs;
  if (alike) return [...perJob, ...(first ? settingsOf(first) : SETTINGS_FIELDS.map(() => null))];
  const settings = jobs.map(settingsOf);
  return [...perJob, ...SETTINGS_FIELDS.map((_, i) => unlessAllNull(settings, (values) => values[i] ?? null))];
}

/** Each job's `value`, or `null` (one SQL `NULL` for the whole array) when no job has one. */
export function unlessAllNull<T>(jobs: readonly T[], value: (job: T) => string | null): (string | null)[] | null {
  for (const job of jobs) if (value(job) !== null) return jobs.map(value);
  return null;
}
