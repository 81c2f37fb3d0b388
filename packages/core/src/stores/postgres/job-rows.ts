import type { Backoff, JobOrder } from '../../contract/types.ts';
import type { ClaimedRecord, JobRecord, NewJob, StoredState } from '../../engine/store.ts';
import type { JobError } from '../../jobs.ts';

/** The columns a claim returns, read into a `ClaimedRecord`: no more than a worker needs to be sent and parsed. */
const CLAIMED_FIELDS = [
  'id',
  'name',
  'version',
  'payload',
  'priority',
  'job_order',
  'run_at',
  'attempts',
  'max_attempts',
  'lease_ms',
  'lease_token',
  'lease_expires_at',
  'progress',
] as const;

const OTHER_FIELDS = [
  'state',
  'created_at',
  'updated_at',
  'backoff',
  'worker_id',
  'result',
  'error',
  'idempotency_key',
  'finished_at',
  'moved_to',
  'replay_of',
] as const;

const selectList = (fields: readonly string[]) => fields.map((field) => `j.${field}`).join(', ');

/** The columns of a claimed job (the table is aliased `j`). */
export const CLAIMED_COLUMNS = selectList(CLAIMED_FIELDS);

/** The columns of a job, as every other statement returns them (the table is aliased `j`). */
export const JOB_COLUMNS = selectList([...CLAIMED_FIELDS, ...OTHER_FIELDS]);

/** A `jobs` row as the drivers return it. */
export interface JobRow {
  id: string;
  name: string;
  version: number;
  payload: unknown;
  state: StoredState;
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
  lease_token: string | null;
  lease_expires_at: Date | null;
  worker_id: string | null;
  progress: number;
  result: unknown;
  error: (Omit<JobError, 'at'> & { at: string }) | null;
  idempotency_key: string | null;
  finished_at: Date | null;
  moved_to: string | null;
  replay_of: string | null;
}

/** A row of `CLAIMED_COLUMNS`. */
export type ClaimedRow = Pick<JobRow, (typeof CLAIMED_FIELDS)[number]>;

export function toClaimedRecord(row: ClaimedRow): ClaimedRecord {
  return {
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
  };
}

export function toJobRecord(row: JobRow): JobRecord {
  return {
    ...toClaimedRecord(row),
    state: row.state,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    backoff: row.backoff,
    workerId: row.worker_id,
    result: row.result ?? null,
    error: row.error === null ? null : { ...row.error, at: new Date(row.error.at) },
    idempotencyKey: row.idempotency_key,
    finishedAt: row.finished_at,
    movedTo: row.moved_to,
    replayOf: row.replay_of,
  };
}

/** A JSON value as text for a `$n::text::jsonb` parameter; `undefined` is stored as JSON `null`. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value ?? null);
}

/** The claim order key: run time in ms, negated for `lifo` so one ascending index serves both. */
export function orderKey(order: JobOrder, runAt: Date): number {
  return order === 'lifo' ? -runAt.getTime() : runAt.getTime();
}

/**
 * The claim tie-breaker after the order key: the id for \`fifo\` (oldest first),
 * the id with its hex digits complemented for \`lifo\` (newest first). Mirrors
 * the generated column \`order_tie\`.
 */
export function orderTie(order: JobOrder, id: string): string {
  return order === 'lifo' ? id.replace(/[0-9a-f]/g, (digit) => (15 - Number.parseInt(digit, 16)).toString(16)) : id;
}

/** Sorts claimed jobs into claim order: priority DESC, order key, order tie. */
export function compareClaimOrder(a: ClaimedRecord, b: ClaimedRecord): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  const byKey = orderKey(a.order, a.runAt) - orderKey(b.order, b.runAt);
  if (byKey !== 0) return byKey;
  const [tieA, tieB] = [orderTie(a.order, a.id), orderTie(b.order, b.id)];
  return tieA < tieB ? -1 : tieA > tieB ? 1 : 0;
}

/**
 * New jobs as parallel text arrays, one per column, for an `unnest(...)`
 * insert: one fixed statement whatever the batch size, and no driver-specific
 * array typing (every array is `text[]`, cast in SQL).
 */
export function newJobColumns(jobs: readonly NewJob[]): (string | null)[][] {
  return [
    jobs.map((job) => job.id),
    jobs.map((job) => job.name),
    jobs.map((job) => String(job.version)),
    jobs.map((job) => toJsonText(job.payload)),
    jobs.map((job) => String(job.priority)),
    jobs.map((job) => job.order),
    jobs.map((job) => job.runAt.toISOString()),
    jobs.map((job) => job.createdAt.toISOString()),
    jobs.map((job) => String(job.maxAttempts)),
    jobs.map((job) => toJsonText(job.backoff)),
    jobs.map((job) => String(job.leaseMs)),
    jobs.map((job) => job.idempotencyKey),
    jobs.map((job) => job.replayOf),
  ];
}
