/**
 * Requeue expired leases: `Store.requeueExpiredLeases`. A plain read first (`hasExpiredLease`, no locks: most
 * sweeps find nothing); then, in one transaction (the caller's), the expired leases locked and read, skipping
 * rows another transaction holds (an ack in flight wins), the jobs out of attempts made `dead`, the rest
 * `waiting`, each with the lost lease's error recorded; a child made dead settles its parent in the same
 * transaction (settle-parents.ts), the names of the parents made ready going to `ready`.
 *
 * Takes `now` and the error to record (its `attempt` is each job's own); a lease that ran out at its attempt's
 * deadline (`attempt_deadline`, a time limit) records `TIMEOUT` instead (`timedOutError`). Returns each job
 * swept, whether it died, its parent, and whether it timed out. Guarantees: a lease is swept once, and only when it expired by `now`.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { SweptLease } from '../../../engine/store.ts';
import { timedOutError } from '../../../engine/timed-out-error.ts';
import type { JobError } from '../../../jobs.ts';
import { execute, type Queryable, selectRows } from '../connection.ts';
import { appendedErrorsSql } from '../error-history.ts';
import { RELEASE_LEASE } from '../job-queries.ts';
import { sqlDate, writeJson } from '../records.ts';
import type { Tables } from '../tables.ts';
import { endedChildren, settleParents } from './settle-parents.ts';

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
 * The sweep, on a connection in a transaction: the expired leases are locked and read
 * (skipping rows another transaction holds, as an ack does), then the dead ones ended, then the rest requeued.
 */
export async function requeueExpiredLeases(
  c: PoolConnection,
  t: Tables,
  now: Date,
  error: Omit<JobError, 'attempt'>,
  ready: string[] = [],
): Promise<SweptLease[]> {
  const at = sqlDate(now);
  const expired = await selectRows(
    c,
    `SELECT id, name, version, attempts, attempts >= max_attempts AS dead, parent_id, on_failure,
         lease_expires_at >= attempt_deadline AS timed_out FROM ${t.jobs}
         WHERE state = 'active' AND lease_expires_at <= ? FOR UPDATE SKIP LOCKED`,
    [at],
  );
  const swept = expired.map((row) => {
    const job: SweptLease = {
      id: String(row.id),
      name: String(row.name),
      version: Number(row.version),
      attempt: Number(row.attempts),
      dead: Number(row.dead) === 1,
    };
    if (row.parent_id !== null) job.parentId = String(row.parent_id);
    if (Number(row.timed_out) === 1) job.timedOut = true;
    return job;
  });
  // The recorded error names the attempt that lost its lease: each row's own `attempts`. Read before the lease
  // is released (`RELEASE_LEASE` comes after it in each update).
  const errorSql = `JSON_SET(IF(lease_expires_at >= attempt_deadline, ?, ?), '$.attempt', attempts)`;
  // `errors` first: it reads the previous `error` (see `appendedErrorsSql`).
  const recordError = `errors = ${appendedErrorsSql(errorSql)}, error = ${errorSql}`;
  const errorJsons = [writeJson(timedOutError(error)), writeJson(error)];
  const dead = swept.filter((job) => job.dead).map((job) => job.id);
  const requeued = swept.filter((job) => !job.dead).map((job) => job.id);
  if (dead.length > 0) {
    await execute(
      c,
      `UPDATE ${t.jobs} SET state = 'dead', ${recordError}, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
         WHERE id IN (?)`,
      [...errorJsons, ...errorJsons, at, at, dead],
    );
    const died = expired.filter((row) => Number(row.dead) === 1);
    const lostLease = (row: Record<string, unknown>) => ({
      ...(Number(row.timed_out) === 1 ? timedOutError(error) : error),
      attempt: Number(row.attempts),
    });
    const children = endedChildren(died, 'dead', lostLease);
    if (children.length > 0) ready.push(...(await settleParents(c, t, children, now)));
  }
  if (requeued.length > 0) {
    await execute(
      c,
      `UPDATE ${t.jobs} SET state = 'waiting', ${recordError}, ${RELEASE_LEASE}, updated_at = ? WHERE id IN (?)`,
      [...errorJsons, ...errorJsons, at, requeued],
    );
  }
  return swept;
}
