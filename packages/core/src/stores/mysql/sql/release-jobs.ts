/**
 * Release jobs: `Store.releaseJobs`, in one transaction (the caller's). The held rows are locked
 * (lock-held-jobs.ts), then made waiting again by one `UPDATE`, their attempt uncounted and lease cleared.
 *
 * Takes the leases and `now`. Returns the ids released; a lease already gone changes nothing.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { LeaseRef } from '../../../engine/store.ts';
import { execute } from '../connection.ts';
import { RELEASE_LEASE } from '../job-queries.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { lockHeldJobs } from './lock-held-jobs.ts';

export async function releaseJobs(
  c: PoolConnection,
  t: Tables,
  leases: readonly LeaseRef[],
  now: Date,
): Promise<string[]> {
  const ids = [...(await lockHeldJobs(c, t, leases, now)).keys()];
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
