import type { JobRead, JobRecord, LeaseRef, NewJob } from '../../engine/store.ts';
import { type Queryable, selectRows } from './connection.ts';
import { JOB_SELECT, jobRow, jobSelectFor, sqlDate } from './records.ts';
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

/** The jobs with these ids, by id; unknown ids are absent. `read` says what of them to leave unread. */
export async function selectJobsByIds(
  db: Queryable,
  t: Tables,
  ids: readonly string[],
  read: JobRead = {},
): Promise<Map<string, JobRecord>> {
  const rows = await selectRows(db, `SELECT ${jobSelectFor(read)} FROM ${t.jobs} WHERE id IN (?)`, [ids]);
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
