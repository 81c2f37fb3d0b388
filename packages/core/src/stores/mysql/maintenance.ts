import type { PoolConnection } from 'mysql2/promise';
import type { SweptLease } from '../../engine/store.ts';
import { FINISHED_STATES, type JobError } from '../../jobs.ts';
import { execute, type Queryable, selectRows } from './connection.ts';
import { appendedErrorsSql } from './error-history.ts';
import { RELEASE_LEASE } from './job-queries.ts';
import { ORDER_KEY_SQL, sqlDate, writeJson } from './rows.ts';
import type { Tables } from './tables.ts';

/** The finished states as the placeholders of an `IN (…)` list, their values passed as parameters. */
const FINISHED_STATE_PLACEHOLDERS = FINISHED_STATES.map(() => '?').join(', ');

/** Whether some lease expired by `now`: a plain read, which takes no locks (most sweeps find nothing). */
export async function hasExpiredLease(db: Queryable, t: Tables, now: Date): Promise<boolean> {
  const expired = await selectRows(
    db,
    `SELECT id FROM ${t.jobs} WHERE state = 'active' AND lease_expires_at <= ? LIMIT 1`,
    [sqlDate(now)],
  );
  return expired.length > 0;
}

/**
 * `Store.requeueExpiredLeases` on a connection in a transaction: the expired leases are locked and read
 * (skipping rows another transaction holds, as an ack does), then the dead ones ended, then the rest requeued.
 */
export async function requeueExpiredLeases(
  c: PoolConnection,
  t: Tables,
  now: Date,
  error: Omit<JobError, 'attempt'>,
): Promise<SweptLease[]> {
  const at = sqlDate(now);
  const expired = await selectRows(
    c,
    `SELECT id, name, version, attempts, attempts >= max_attempts AS dead FROM ${t.jobs}
         WHERE state = 'active' AND lease_expires_at <= ? FOR UPDATE SKIP LOCKED`,
    [at],
  );
  const swept: SweptLease[] = expired.map((row) => ({
    id: String(row.id),
    name: String(row.name),
    version: Number(row.version),
    attempt: Number(row.attempts),
    dead: Number(row.dead) === 1,
  }));
  // The recorded error names the attempt that lost its lease: each row's own `attempts`.
  const errorSql = `JSON_SET(?, '$.attempt', attempts)`;
  // `errors` first: it reads the previous `error` (see `appendedErrorsSql`).
  const recordError = `errors = ${appendedErrorsSql(errorSql)}, error = ${errorSql}`;
  const errorJson = writeJson(error);
  const dead = swept.filter((job) => job.dead).map((job) => job.id);
  const requeued = swept.filter((job) => !job.dead).map((job) => job.id);
  if (dead.length > 0) {
    await execute(
      c,
      `UPDATE ${t.jobs} SET state = 'dead', ${recordError}, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
         WHERE id IN (?)`,
      [errorJson, errorJson, at, at, dead],
    );
  }
  if (requeued.length > 0) {
    await execute(
      c,
      `UPDATE ${t.jobs} SET state = 'waiting', ${recordError}, ${RELEASE_LEASE}, updated_at = ? WHERE id IN (?)`,
      [errorJson, errorJson, at, requeued],
    );
  }
  return swept;
}

/** `Store.retryDeadJobs`, one statement. */
export async function retryDeadJobs(
  db: Queryable,
  t: Tables,
  target: { name?: string; ids?: readonly string[] },
  now: Date,
): Promise<number> {
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
  const retried = await execute(
    db,
    `UPDATE ${t.jobs}
         SET state = 'waiting', run_at = ?, order_key = ${ORDER_KEY_SQL}, attempts = 0, finished_at = NULL,
           ${RELEASE_LEASE}, updated_at = ?
         WHERE ${where.join(' AND ')}`,
    values,
  );
  return retried.affectedRows;
}

/** `Store.pruneJobs`, one statement. */
export async function pruneJobs(db: Queryable, t: Tables, finishedBefore: Date, limit: number): Promise<number> {
  if (limit <= 0) return 0;
  const pruned = await execute(
    db,
    `DELETE FROM ${t.jobs}
         WHERE finished_at < ? AND state IN (${FINISHED_STATE_PLACEHOLDERS}) ORDER BY finished_at LIMIT ?`,
    [sqlDate(finishedBefore), ...FINISHED_STATES, Math.floor(limit)],
  );
  return pruned.affectedRows;
}
