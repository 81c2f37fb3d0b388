import type { Backoff, JobOrder } from '../../contract/types.ts';
import type { ChildOutcome, JobRead, JobRecord, NewJob } from '../../engine/store.ts';
import { type ChildFailurePolicy, ERROR_HISTORY_LIMITS, type JobError, type TraceContext } from '../../jobs.ts';
import { withFlowFields } from '../shared/flow-records.ts';
import { insertedRecord } from '../shared/inserted-record.ts';
import { engineState, type KeptState, notStartedState } from '../shared/not-started.ts';
import { isUnread, VALUE_COLUMNS } from '../shared/unread-columns.ts';

/**
 * A job as the MongoDB store keeps it. `_id` is the job id (UUIDv7, so `_id`
 * order is creation order). `payload` and `result` are kept as JSON text, so
 * any JSON value round-trips exactly (keys such as `$ref` or `a.b` included)
 * and no user value is ever read as an operator. `orderKey` encodes the run
 * time for fifo and lifo alike (see `orderKeyOf`), so one ascending index key
 * serves both orders.
 */
export interface JobDocument extends KeptAsRecorded {
  _id: string;
  payload: string | null;
  /** `delayed`: a `waiting` job kept out of the claim index until a claim finds it due (see `NOT_STARTED`). */
  state: KeptState;
  orderKey: string;
  result: string | null;
  /** Every failed attempt's error, oldest first (`appendedErrors`); absent on jobs stored before it existed. */
  errors?: JobError[] | null;
  /** Until when `idempotencyKey` holds; `null` (or absent, on jobs stored before it): while retained. */
  idempotencyExpiresAt?: Date | null;
  /** `true`: `idempotencyKey` frees when the job finishes (`JobRecord.idempotencyUntilFinished`); absent: not. */
  idempotencyUntilFinished?: boolean;
  /** Each attempt's time limit (`JobRecord.timeoutMs`); absent: none. */
  timeoutMs?: number | null;
  /** Set by each claim of a job with a time limit: the attempt's deadline (`JobRecord.attemptDeadline`). */
  attemptDeadline?: Date | null;
  /** In the unique `debounce` index while a string; `null` (or absent) on every job not debounced. */
  debounceKey?: string | null;
  /** Absent on jobs stored before it existed. */
  movedFrom?: string | null;
  /**
   * The trace context the job was created in, as JSON text (its keys are the producer's, so they are never
   * field names). Absent on jobs a server of an earlier version wrote.
   */
  traceContext?: string | null;
  /** The job's group (the enqueue option `group`), in the group claim index while waiting; absent: none. */
  group?: string | null;
  /** For a child in a flow: its parent's id (in the `children` index) and name (so writes to it are targeted). */
  parentId?: string | null;
  parentName?: string | null;
  /** For a child in a flow: what its dead or cancelled end does to its parent. */
  onFailure?: ChildFailurePolicy | null;
  /** For a parent: its children, and those not ended (above 0 while it is `waiting-children`). Absent: 0. */
  childCount?: number;
  pendingChildren?: number;
  /**
   * A job's own retention (`NewJob.retainCompletedMs`, `retainDeadMs`): both present (one may be `null`) on a job
   * that has one, in the pruner's indexes of those once it ends (`OWN_RETENTION_INDEXES`); absent on every other job.
   */
  retainCompletedMs?: number | null;
  retainDeadMs?: number | null;
  /**
   * `true` on a job without a retention of its own, written with it (`ttlMarker`): only such jobs are in the
   * history TTL index (`HISTORY_TTL_INDEX`), which expires them at `historyRetentionMs`. Absent on a job with
   * one (`null` once a debounce gave the holder one), which the pruner deletes, and on jobs an earlier version
   * wrote until `dropRetiredMongoIndexes` marks them.
   */
  ttl?: true | null;
}

/** The fields a job document keeps under the name and type its `JobRecord` has. */
type KeptAsRecorded = Pick<
  JobRecord,
  | 'name'
  | 'version'
  | 'priority'
  | 'order'
  | 'runAt'
  | 'createdAt'
  | 'updatedAt'
  | 'attempts'
  | 'maxAttempts'
  | 'backoff'
  | 'leaseMs'
  | 'leaseToken'
  | 'leaseExpiresAt'
  | 'workerId'
  | 'progress'
  | 'error'
  | 'idempotencyKey'
  | 'finishedAt'
  | 'movedTo'
  | 'replayOf'
>;

/** The claim order: higher priority first, then `orderKey` (run time per fifo/lifo), then id. */
export const CLAIM_SORT = { priority: -1, orderKey: 1, _id: 1 } as const;

const TIME_WIDTH = 15;
const MAX_TIME_MS = 10 ** TIME_WIDTH - 1;

function timeText(ms: number): string {
  return String(Math.min(Math.max(Math.trunc(ms), 0), MAX_TIME_MS)).padStart(TIME_WIDTH, '0');
}

/** Each hex digit replaced by 15 minus it, so ascending text order of the result is descending id order. */
function invertedId(id: string): string {
  return id.toLowerCase().replace(/[0-9a-f]/g, (digit) => (15 - Number.parseInt(digit, 16)).toString(16));
}

/**
 * The ascending claim key after priority. fifo: the run time as fixed-width
 * text, ties falling to `_id` (creation order). lifo: the inverted run time
 * followed by the inverted id, so newer run times and, among equal ones,
 * newer jobs come first.
 */
export function orderKeyOf(order: JobOrder, runAt: Date, id: string): string {
  const ms = runAt.getTime();
  return order === 'lifo' ? `${timeText(MAX_TIME_MS - ms)}|${invertedId(id)}` : timeText(ms);
}

/**
 * An update-pipeline expression of the `orderKey` of a job moved to `runAt`,
 * by the job's own `order`; a lifo key keeps its inverted-id suffix.
 */
export function orderKeyExpression(runAt: Date): Record<string, unknown> {
  const ms = runAt.getTime();
  return {
    $cond: [
      { $eq: ['$order', 'lifo'] },
      { $concat: [timeText(MAX_TIME_MS - ms), { $substrCP: ['$orderKey', TIME_WIDTH, 64] }] },
      timeText(ms),
    ],
  };
}

/** A string from a typed field, or `null` when a caller passed anything else (which never reaches a query). */
export function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** Wraps a value for an update pipeline, so it is stored as given and never evaluated. */
export function literal(value: unknown): { $literal: unknown } {
  return { $literal: value };
}

/** JSON text of a value; `null` for `undefined`. */
export function toJson(value: unknown): string | null {
  return value === undefined ? null : (JSON.stringify(value) ?? null);
}

/** What a read of job documents leaves out: the fields `read` leaves unread (they then read as `null` and none). */
export function projectionFor(read: JobRead): Record<string, 0> | undefined {
  const left = VALUE_COLUMNS.filter((field) => isUnread(field, read));
  return left.length === 0 ? undefined : Object.fromEntries(left.map((field) => [field, 0 as const]));
}

/** The value of JSON text; `null` for a missing value. */
export function fromJson(text: string | null | undefined): unknown {
  return typeof text === 'string' ? JSON.parse(text) : null;
}

/** A backoff with only its defined fields, so no `undefined` is stored as `null`. */
export function cleanBackoff(backoff: Backoff): Backoff {
  const clean: Backoff = { type: backoff.type, delayMs: backoff.delayMs };
  if (typeof backoff.maxDelayMs === 'number') clean.maxDelayMs = backoff.maxDelayMs;
  return clean;
}

/** A job error with only its defined fields. */
export function cleanError(error: JobError): JobError {
  const clean: JobError = { message: String(error.message), attempt: error.attempt, at: error.at };
  if (error.permanent === true) clean.permanent = true;
  if (typeof error.code === 'string') clean.code = error.code;
  if (typeof error.name === 'string') clean.name = error.name;
  if (typeof error.stack === 'string') clean.stack = error.stack;
  return clean;
}

/**
 * An update-pipeline expression of the job's `errors` with `added` (an expression) appended, the oldest
 * dropped once `ERROR_HISTORY_LIMITS.attempts` are kept. A job stored before `errors` existed starts it from
 * its last `error`. Reads the document as it was before the update, as every expression of one `$set` stage does.
 */
export function appendedErrors(added: unknown): Record<string, unknown> {
  const lastOnly = { $cond: [{ $eq: [{ $ifNull: ['$error', null] }, null] }, [], ['$error']] };
  return {
    $slice: [{ $concatArrays: [{ $ifNull: ['$errors', lastOnly] }, [added]] }, -ERROR_HISTORY_LIMITS.attempts],
  };
}

/** The document a new job is inserted as: its inserted record, with the fields MongoDB keeps its own way. */
export function toJobDocument(job: NewJob): JobDocument {
  const { id, group, ...record } = insertedRecord(job);
  return {
    ...record,
    // Only a job with a group carries the field, which puts it in the group claim index.
    ...(group === null ? {} : { group }),
    _id: id,
    state: notStartedState(job.runAt, job.createdAt),
    payload: toJson(job.payload),
    result: null,
    orderKey: orderKeyOf(job.order, job.runAt, job.id),
    backoff: cleanBackoff(job.backoff),
    traceContext: job.traceContext === null ? null : toJson(job.traceContext),
    ...(ttlMarker(job) ? { ttl: true } : {}),
  };
}

/**
 * Whether a job is expired by the history TTL index: it has no retention of its own, so `historyRetentionMs`
 * is its retention. A TTL index's partial filter cannot select a missing field, hence the marker.
 */
export function ttlMarker(job: Pick<NewJob, 'retainCompletedMs' | 'retainDeadMs'>): boolean {
  return job.retainCompletedMs == null && job.retainDeadMs == null;
}

/** The store-neutral record of a stored document. */
/** The fields of a child document `toChildOutcome` reads: a projection for reads of a parent's children. */
export const CHILD_OUTCOME_FIELDS = {
  _id: 1,
  name: 1,
  state: 1,
  runAt: 1,
  result: 1,
  error: 1,
  childCount: 1,
} as const;

/** A child as its parent's handler reads it, from a document projected to `CHILD_OUTCOME_FIELDS`. */
export function toChildOutcome(
  doc: Pick<JobDocument, '_id' | 'name' | 'state' | 'runAt' | 'result' | 'error' | 'childCount'>,
): ChildOutcome {
  return {
    id: doc._id,
    name: doc.name,
    state: engineState(doc.state),
    runAt: doc.runAt,
    result: fromJson(doc.result),
    error: doc.error ? cleanError(doc.error) : null,
    childCount: doc.childCount ?? 0,
  };
}

export function toJobRecord(doc: JobDocument): JobRecord {
  const record = fieldsOf(doc);
  if (doc.idempotencyUntilFinished === true) record.idempotencyUntilFinished = true;
  if (typeof doc.timeoutMs === 'number') {
    record.timeoutMs = doc.timeoutMs;
    record.attemptDeadline = doc.attemptDeadline ?? null;
  }
  return withFlowFields(record, {
    parentId: doc.parentId ?? null,
    onFailure: doc.onFailure ?? null,
    childCount: doc.childCount ?? 0,
    pendingChildren: doc.pendingChildren ?? 0,
  });
}

/** The fields every job has, of a stored document. */
function fieldsOf(doc: JobDocument): JobRecord {
  const record: JobRecord = {
    id: doc._id,
    name: doc.name,
    version: doc.version,
    payload: fromJson(doc.payload),
    state: engineState(doc.state),
    priority: doc.priority,
    order: doc.order,
    runAt: doc.runAt,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
    attempts: doc.attempts,
    maxAttempts: doc.maxAttempts,
    backoff: cleanBackoff(doc.backoff),
    leaseMs: doc.leaseMs,
    leaseToken: doc.leaseToken ?? null,
    leaseExpiresAt: doc.leaseExpiresAt ?? null,
    workerId: doc.workerId ?? null,
    progress: doc.progress,
    result: fromJson(doc.result),
    error: doc.error ? cleanError(doc.error) : null,
    errors: doc.errors ? doc.errors.map(cleanError) : doc.error ? [cleanError(doc.error)] : [],
    idempotencyKey: doc.idempotencyKey ?? null,
    idempotencyExpiresAt: doc.idempotencyExpiresAt ?? null,
    debounceKey: doc.debounceKey ?? null,
    finishedAt: doc.finishedAt ?? null,
    movedTo: doc.movedTo ?? null,
    movedFrom: doc.movedFrom ?? null,
    replayOf: doc.replayOf ?? null,
    traceContext: fromJson(doc.traceContext) as TraceContext | null,
    group: doc.group ?? null,
  };
  if (doc.retainCompletedMs !== undefined || doc.retainDeadMs !== undefined) {
    record.retainCompletedMs = doc.retainCompletedMs ?? null;
    record.retainDeadMs = doc.retainDeadMs ?? null;
  }
  return record;
}

/** A registered schema as stored; the JSON Schema is JSON text (it has `$`-prefixed keys). */
export interface SchemaDocument {
  name: string;
  version: number;
  fingerprint: string;
  jsonSchema: string | null;
  registeredAt: Date;
}

/** A consumer's presence; `_id` is the worker id. */
export interface WorkerDocument {
  _id: string;
  host: string;
  name: string;
  minVersion: number;
  maxVersion: number;
  seenAt: Date;
  /** Absent on presence a server of an earlier version wrote. */
  pid?: number | null;
  startedAt?: Date | null;
}

/** A schedule kept in the store; `_id` is its key. Payload and options are JSON text (they may have `$` keys). */
export interface ScheduleDocument {
  _id: string;
  cron: string;
  timezone: string;
  name: string;
  version: number | null;
  payload: string | null;
  options: string | null;
  updatedAt: Date;
}

/** The last run of a schedule; `_id` is the schedule's occurrence-key prefix. */
export interface ScheduleRunDocument {
  _id: string;
  jobId: string;
  at: Date;
}

/** One cross-process wake-up. */
export interface WakeupDocument {
  name: string;
}
