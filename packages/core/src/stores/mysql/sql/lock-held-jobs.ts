/**
 * Lock held jobs: the first step of a batch ack (complete-jobs.ts, release-jobs.ts). Of `leases`, the jobs
 * that token holds, active with its lease unexpired at `now`.
 *
 * One `SELECT … FOR UPDATE` by primary key; runs in the ack's transaction. Locks: the rows it reads, until the
 * transaction ends, so the ack's update changes only jobs still held. Returns those jobs' rows by id: `id`,
 * `name`, and, for a child in a flow, `parent_id` and `on_failure` (null on every other job).
 */
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import type { LeaseRef } from '../../../engine/store.ts';
import { selectRows } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function lockHeldJobs(
  c: PoolConnection,
  t: Tables,
  leases: readonly LeaseRef[],
  now: Date,
): Promise<Map<string, RowDataPacket>> {
  const held = await selectRows(
    c,
    `SELECT id, lease_token, name, parent_id, on_failure FROM ${t.jobs}
       WHERE id IN (?) AND state = 'active' AND lease_expires_at > ? FOR UPDATE`,
    [leases.map((lease) => lease.id), sqlDate(now)],
  );
  const rows = new Map(held.map((row) => [String(row.id), row]));
  const mine = new Map<string, RowDataPacket>();
  for (const lease of leases) {
    const row = rows.get(lease.id);
    if (row && String(row.lease_token) === lease.leaseToken) mine.set(lease.id, row);
  }
  return mine;
}
