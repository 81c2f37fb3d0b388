/**
 * Lock held jobs: the first step of a batch ack (complete-jobs.ts, release-jobs.ts). Of `leases`, the ids whose
 * job that token holds, active with its lease unexpired at `now`.
 *
 * One `SELECT … FOR UPDATE` by primary key; runs in the ack's transaction. Locks: the rows it reads, until the
 * transaction ends, so the ack's update changes only jobs still held. Returns those ids.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { LeaseRef } from '../../../engine/store.ts';
import { selectRows } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function lockHeldJobs(
  c: PoolConnection,
  t: Tables,
  leases: readonly LeaseRef[],
  now: Date,
): Promise<Set<string>> {
  const held = await selectRows(
    c,
    `SELECT id, lease_token FROM ${t.jobs}
       WHERE id IN (?) AND state = 'active' AND lease_expires_at > ? FOR UPDATE`,
    [leases.map((lease) => lease.id), sqlDate(now)],
  );
  const tokens = new Map(held.map((row) => [String(row.id), String(row.lease_token)]));
  return new Set(leases.filter((lease) => tokens.get(lease.id) === lease.leaseToken).map((lease) => lease.id));
}
