/**
 * Complete jobs: `Store.completeJobs`, in one transaction (the caller's). The held rows are locked
 * (lock-held-jobs.ts), then completed by one `UPDATE`, each with its own result.
 *
 * Takes the acks (id, lease token, result) and `now`. Returns the ids completed, and the names of the parents
 * their completion made ready; an ack whose lease is gone changes nothing. Guarantees: a completed job keeps
 * its lease's token (its expiry is cleared), so a repeat of that ack is recognised as applied; a completed
 * child settles its parent in the same transaction (settle-parents.ts), and a job without a parent costs
 * nothing more.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { LeaseRef } from '../../../engine/store.ts';
import { execute } from '../connection.ts';
import { END_LEASE_KEEPING_TOKEN } from '../job-queries.ts';
import { sqlDate, writeJson } from '../records.ts';
import type { Tables } from '../tables.ts';
import { lockHeldJobs } from './lock-held-jobs.ts';
import { endedChildren, settleParents } from './settle-parents.ts';

export async function completeJobs(
  c: PoolConnection,
  t: Tables,
  jobs: readonly (LeaseRef & { result: unknown })[],
  now: Date,
): Promise<{ ids: string[]; ready: string[] }> {
  const held = await lockHeldJobs(c, t, jobs, now);
  const results = new Map<string, string>();
  for (const job of jobs) {
    if (held.has(job.id) && !results.has(job.id)) results.set(job.id, writeJson(job.result));
  }
  if (results.size === 0) return { ids: [], ready: [] };
  const ids = [...results.keys()];
  await execute(
    c,
    `UPDATE ${t.jobs}
         SET state = 'completed', result = CASE id ${ids.map(() => 'WHEN ? THEN ?').join(' ')} END,
           ${END_LEASE_KEEPING_TOKEN}, finished_at = ?, updated_at = ?
         WHERE id IN (?)`,
    [...ids.flatMap((id) => [id, results.get(id)]), sqlDate(now), sqlDate(now), ids],
  );
  const children = endedChildren([...held.values()], 'completed');
  return { ids, ready: children.length === 0 ? [] : await settleParents(c, t, children, now) };
}
