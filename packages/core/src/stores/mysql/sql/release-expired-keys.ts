/**
 * Release expired keys: the second step of an insert whose idempotency key was taken by a job whose key had
 * expired, or was held until the job finished, which it had. One `UPDATE` clears each such key on its holder,
 * only if that still holds; the engine then sends the job again. Takes no lock beyond the statement's.
 */
import type { NewJob } from '../../../engine/store.ts';
import { execute, type Queryable } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

/** Clears each key of `jobs` on its holder when it had let go of it by the time the job found it taken. */
export async function releaseExpiredKeys(db: Queryable, t: Tables, jobs: readonly NewJob[]): Promise<void> {
  if (jobs.length === 0) return;
  const match = jobs
    .map(
      () =>
        "(name = ? AND idempotency_key = ? AND (idempotency_expires_at <= ? OR (idempotency_until_finished AND state IN ('completed', 'dead', 'cancelled'))))",
    )
    .join(' OR ');
  const values = jobs.flatMap((job) => [job.name, job.idempotencyKey, sqlDate(job.createdAt)]);
  await execute(db, `UPDATE ${t.jobs} SET idempotency_key = NULL WHERE ${match}`, values);
}
