/**
 * Move a job: `Store.moveJob`, in one transaction (the caller's). The fenced completion of the held job into
 * `next`, the insert of `next` (`ON DUPLICATE KEY UPDATE id = id`), and, only when `next` carries an idempotency
 * key, the read of the key's holder, which the insert's duplicate-key path has locked.
 *
 * Returns the job inserted, or the retained job holding `next`'s key (the held job then points at it), or null
 * when the lease did not hold. Guarantees: the held job completes if and only if `next` (or its key's holder)
 * exists when the transaction commits.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { InsertOutcome, LeaseRef, NewJob } from '../../../engine/store.ts';
import { insertedRecord } from '../../shared/inserted-record.ts';
import { execute } from '../connection.ts';
import { FENCE, fenceValues, idempotencyRef, RELEASE_LEASE, selectInserted } from '../job-queries.ts';
import { JOB_COLUMNS, newJobValues, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

/** Thrown inside `moveJob`'s transaction to roll it back when the next job's key holder vanished. */
export class KeyHolderVanished extends Error {}

/**
 * `Store.moveJob` on a connection in a transaction: the held job completed into `next`, and `next` inserted,
 * or, when a retained job holds its idempotency key, the held job completed into that job. Resolves to
 * `null` when the lease did not hold; throws `KeyHolderVanished` (roll back, then answer `KeyHolderGone`)
 * when the key's holder vanished.
 */
export async function moveJob(
  c: PoolConnection,
  t: Tables,
  lease: LeaseRef,
  next: NewJob,
  now: Date,
): Promise<InsertOutcome | null> {
  const moved = await execute(
    c,
    `UPDATE ${t.jobs} SET state = 'completed', moved_to = ?, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
           WHERE ${FENCE}`,
    [next.id, sqlDate(now), sqlDate(now), ...fenceValues(lease, now)],
  );
  if (moved.affectedRows === 0) return null;
  await execute(c, `INSERT INTO ${t.jobs} (${JOB_COLUMNS.join(', ')}) VALUES ? ON DUPLICATE KEY UPDATE id = id`, [
    [newJobValues(next)],
  ]);
  if (next.idempotencyKey === null) return { job: insertedRecord(next), created: true };
  // A next job whose idempotency key is taken becomes that retained job, as an enqueue would.
  const holder = (await selectInserted(c, t, [next])).byKey.get(idempotencyRef(next.name, next.idempotencyKey));
  if (!holder) throw new KeyHolderVanished();
  if (holder.id === next.id) return { job: insertedRecord(next), created: true };
  await execute(c, `UPDATE ${t.jobs} SET moved_to = ? WHERE id = ?`, [holder.id, lease.id]);
  return { job: holder, created: false };
}
