import type { PoolConnection } from 'mysql2/promise';
import type { LeaseRef } from '../../engine/store.ts';
import { execute, selectRows } from './connection.ts';
import { END_LEASE_KEEPING_TOKEN, RELEASE_LEASE } from './job-queries.ts';
import { sqlDate, writeJson } from './rows.ts';
import type { Tables } from './tables.ts';

/**
 * `Store.completeJobs` on a connection in a transaction: the held rows locked, then completed in one
 * statement, each with its own result; the lease's token stays on the row.
 */
export async function completeHeldJobs(
  c: PoolConnection,
  t: Tables,
  jobs: readonly (LeaseRef & { result: unknown })[],
  now: Date,
): Promise<string[]> {
  const held = await lockHeld(c, t, jobs, now);
  const results = new Map<string, string>();
  for (const job of jobs) {
    if (held.has(job.id) && !results.has(job.id)) results.set(job.id, writeJson(job.result));
  }
  if (results.size === 0) return [];
  const ids = [...results.keys()];
  await execute(
    c,
    `UPDATE ${t.jobs}
         SET state = 'completed', result = CASE id ${ids.map(() => 'WHEN ? THEN ?').join(' ')} END,
           ${END_LEASE_KEEPING_TOKEN}, finished_at = ?, updated_at = ?
         WHERE id IN (?)`,
    [...ids.flatMap((id) => [id, results.get(id)]), sqlDate(now), sqlDate(now), ids],
  );
  return ids;
}

/** `Store.releaseJobs` on a connection in a transaction: the held rows locked, then made waiting again. */
export async function releaseHeldJobs(
  c: PoolConnection,
  t: Tables,
  leases: readonly LeaseRef[],
  now: Date,
): Promise<string[]> {
  const ids = [...(await lockHeld(c, t, leases, now))];
  if (ids.length === 0) return [];
  await execute(
    c,
    `UPDATE ${t.jobs}
         SET state = 'waiting', attempts = attempts - 1, ${RELEASE_LEASE}, worker_id = NULL, updated_at = ?
         WHERE id IN (?)`,
    [sqlDate(now), ids],
  );
  return ids;
}

/** Of `leases`, the ids whose job that token holds, active with its lease unexpired; their rows locked. */
async function lockHeld(c: PoolConnection, t: Tables, leases: readonly LeaseRef[], now: Date): Promise<Set<string>> {
  const held = await selectRows(
    c,
    `SELECT id, lease_token FROM ${t.jobs}
       WHERE id IN (?) AND state = 'active' AND lease_expires_at > ? FOR UPDATE`,
    [leases.map((lease) => lease.id), sqlDate(now)],
  );
  const tokens = new Map(held.map((row) => [String(row.id), String(row.lease_token)]));
  return new Set(leases.filter((lease) => tokens.get(lease.id) === lease.leaseToken).map((lease) => lease.id));
}
