import type { RowDataPacket } from 'mysql2/promise';
import type { ClaimRequest, JobRecord, LeaseRef, NewJob } from '../../engine/store.ts';
import { CLAIM_INDEX, DELAYED_INDEX } from './baseline.ts';
import { execute, type Queryable, selectRows } from './connection.ts';
import { JOB_SELECT, jobRow, sqlDate } from './rows.ts';
import type { Tables } from './tables.ts';

/** The lease fence: the row is active, held by this token, and the lease has not expired. */
export const FENCE = `id = ? AND lease_token = ? AND state = 'active' AND lease_expires_at > ?`;

/** The values of `FENCE`, in order. */
export function fenceValues(lease: LeaseRef, now: Date): unknown[] {
  return [lease.id, lease.leaseToken, sqlDate(now)];
}

/** Clears the lease of a row leaving `active`. */
export const RELEASE_LEASE = 'lease_token = NULL, lease_expires_at = NULL';

/** Ends the lease of a row its ack completes, keeping the token, so a repeat of that ack is recognised. */
export const END_LEASE_KEEPING_TOKEN = 'lease_expires_at = NULL';

/** A map key for a job's `(name, idempotencyKey)`. */
export function idempotencyRef(name: string, key: string): string {
  return JSON.stringify([name, key]);
}

/** Due delayed jobs one promotion statement moves at most; the claim repeats it while it moves that many. */
export const PROMOTE_BATCH = 1000;

/**
 * The claim's first step: moves the due delayed jobs of one name, up to `PROMOTE_BATCH` and earliest first,
 * into the claim index's `waiting` range, where the next step finds them. Values: name, now.
 */
export function promoteDueJobsSql(t: Tables): string {
  return `UPDATE ${t.jobs} FORCE INDEX (${DELAYED_INDEX}) SET state = 'waiting', delayed_until = NULL
    WHERE name = ? AND delayed_until <= ? AND state = 'delayed' ORDER BY delayed_until LIMIT ${PROMOTE_BATCH}`;
}

/** Runs `promoteDueJobsSql` until it leaves none of the name's delayed jobs due, however many came due at once. */
export async function promoteDueJobs(c: Queryable, t: Tables, name: string, now: Date): Promise<void> {
  const promote = promoteDueJobsSql(t);
  while ((await execute(c, promote, [name, sqlDate(now)])).affectedRows === PROMOTE_BATCH);
}

/** The columns a claim reads of each job it leases (`claimedRecord`). */
const CLAIMED_COLUMNS = [
  'id',
  'name',
  'version',
  'payload',
  'attempts',
  'max_attempts',
  'lease_ms',
  'progress',
  'run_at',
  'trace_context',
] as const;

export const CLAIMED_SELECT = CLAIMED_COLUMNS.join(', ');

/** `CLAIMED_SELECT` with each column read from the table aliased `alias`. */
export function claimedSelectOf(alias: string): string {
  return CLAIMED_COLUMNS.map((column) => `${alias}.${column}`).join(', ');
}

/**
 * The claim's second step: locks up to `limit` ready jobs of one name and
 * version range, in claim order, skipping rows other claims hold, and reads
 * what a worker is handed of them (`claimedRecord`); the lock keeps those
 * values until the claim commits. It reads only the claim index's `waiting`
 * range of that name, so finished history never costs it anything. Values:
 * name, now, minVersion, maxVersion, limit. With `countActive`, each row also
 * carries `type_active`, the name's `active` jobs, read by the same statement
 * (values: name first).
 */
export function claimCandidatesSql(t: Tables, options: { countActive?: boolean } = {}): string {
  const active = options.countActive ? `${countActiveSql(t)} AS type_active, ` : '';
  return `SELECT ${active}${CLAIMED_SELECT}
    FROM ${t.jobs} FORCE INDEX (${CLAIM_INDEX})
    WHERE state = 'waiting' AND name = ? AND run_at <= ? AND version BETWEEN ? AND ?
    ORDER BY priority DESC, order_key, tie_key, id LIMIT ? FOR UPDATE SKIP LOCKED`;
}

/**
 * Locks up to `limit` ready jobs of the request's name and version range in claim order (`claimCandidatesSql`),
 * to be leased by `leaseJobs`. Under a `concurrency` limit, the name's active jobs are counted by the same
 * statement, and only the first of the locked jobs that fit beside them are returned: the type's other limited
 * claims wait for its settings row, which the caller holds, so none starts one meanwhile.
 */
export async function pickInOrder(
  c: Queryable,
  t: Tables,
  request: ClaimRequest,
  limit: number,
  concurrency: number | null = null,
): Promise<RowDataPacket[]> {
  const counting = concurrency !== null;
  const rows = await selectRows(c, claimCandidatesSql(t, { countActive: counting }), [
    ...(counting ? [request.name] : []),
    request.name,
    sqlDate(request.now),
    request.minVersion,
    request.maxVersion,
    counting ? Math.min(limit, concurrency) : limit,
  ]);
  if (!counting || rows.length === 0) return rows;
  return rows.slice(0, Math.max(0, concurrency - Number(rows[0]?.type_active)));
}

/** A scalar subquery: the number of `active` jobs of one name. Values: name. */
export function countActiveSql(t: Tables): string {
  return `(SELECT COUNT(*) FROM ${t.jobs} FORCE INDEX (listing) WHERE name = ? AND state = 'active')`;
}

/** Leases the jobs with these ids, locked by the claim's transaction, to `request`. */
export async function leaseJobs(c: Queryable, t: Tables, ids: readonly string[], request: ClaimRequest): Promise<void> {
  const { now } = request;
  const expiry =
    request.leaseMs === null
      ? { sql: 'TIMESTAMPADD(MICROSECOND, lease_ms * 1000, CAST(? AS DATETIME(3)))', value: sqlDate(now) }
      : { sql: '?', value: sqlDate(new Date(now.getTime() + request.leaseMs)) };
  await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'active', lease_token = ?, lease_expires_at = ${expiry.sql},
       worker_id = ?, attempts = attempts + 1, updated_at = ?
     WHERE id IN (?)`,
    [request.leaseToken, expiry.value, request.workerId, sqlDate(now), ids],
  );
}

/** The jobs with these ids, by id; unknown ids are absent. */
export async function selectJobsByIds(
  db: Queryable,
  t: Tables,
  ids: readonly string[],
): Promise<Map<string, JobRecord>> {
  const rows = await selectRows(db, `SELECT ${JOB_SELECT} FROM ${t.jobs} WHERE id IN (?)`, [ids]);
  return new Map(rows.map((row) => [String(row.id), jobRow(row)]));
}

/** The stored rows for a batch just inserted: by id for jobs without a key, by `(name, key)` for the rest. */
export async function selectInserted(
  db: Queryable,
  t: Tables,
  jobs: readonly NewJob[],
): Promise<{ byId: Map<string, JobRecord>; byKey: Map<string, JobRecord> }> {
  const ids = jobs.filter((job) => job.idempotencyKey === null).map((job) => job.id);
  const keyed = jobs.filter((job) => job.idempotencyKey !== null);
  const parts: string[] = [];
  const values: unknown[] = [];
  if (ids.length > 0) {
    parts.push(`SELECT ${JOB_SELECT} FROM ${t.jobs} WHERE id IN (?)`);
    values.push(ids);
  }
  if (keyed.length > 0) {
    const match = keyed.map(() => '(name = ? AND idempotency_key = ?)').join(' OR ');
    parts.push(`SELECT ${JOB_SELECT} FROM ${t.jobs} WHERE ${match}`);
    values.push(...keyed.flatMap((job) => [job.name, job.idempotencyKey]));
  }
  const records = (await selectRows(db, parts.join(' UNION ALL '), values)).map(jobRow);
  return {
    byId: new Map(records.map((job) => [job.id, job])),
    byKey: new Map(
      records
        .filter((job) => job.idempotencyKey !== null)
        .map((job) => [idempotencyRef(job.name, job.idempotencyKey as string), job]),
    ),
  };
}
