/**
 * Move a job: `Store.moveJob`, in one transaction (the caller's). The fenced completion of the held job into
 * `next`, the insert of `next` (`ON DUPLICATE KEY UPDATE id = id`), and, only when `next` carries an idempotency
 * key, the read of the key's holder, which the insert's duplicate-key path has locked.
 *
 * Returns the job inserted, or the retained job holding `next`'s key (the held job then points at it), or null
 * when the lease did not hold. A held child, completed so, settles its parent in the same transaction
 * (settle-parents.ts); the names of the parents made ready go to `ready`. Guarantees: the held job completes
 * if and only if `next` (or its key's holder) exists when the transaction commits.
 */
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import type { InsertOutcome, LeaseRef, NewJob } from '../../../engine/store.ts';
import { insertedRecord } from '../../shared/inserted-record.ts';
import { execute, selectRows } from '../connection.ts';
import { RollBack } from '../errors.ts';
import { FENCE, fenceValues, idempotencyRef, RELEASE_LEASE, selectInserted } from '../job-queries.ts';
import { insertColumns, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { endedChildren, settleParents } from './settle-parents.ts';

/** Thrown inside `moveJob`'s transaction to roll it back when the next job's key holder vanished. */
export class KeyHolderVanished extends RollBack {}

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
  ready: string[] = [],
): Promise<InsertOutcome | null> {
  const complete = (also: string) =>
    execute(
      c,
      `UPDATE ${t.jobs} SET state = 'completed', moved_to = ?, ${RELEASE_LEASE}, finished_at = ?, updated_at = ?
           WHERE ${FENCE}${also}`,
      [next.id, sqlDate(now), sqlDate(now), ...fenceValues(lease, now)],
    );
  // A job without a parent completes in one statement; a child is read first, then settles its parent.
  let child: RowDataPacket[] = [];
  if ((await complete(' AND parent_id IS NULL')).affectedRows === 0) {
    child = await selectRows(c, `SELECT id, name, parent_id, on_failure FROM ${t.jobs} WHERE ${FENCE} FOR UPDATE`, [
      ...fenceValues(lease, now),
    ]);
    if (child.length === 0 || (await complete('')).affectedRows === 0) return null;
  }
  if (child.length > 0) ready.push(...(await settleParents(c, t, endedChildren(child, 'completed'), now)));
  const { columns, rows } = insertColumns([next]);
  await execute(c, `INSERT INTO ${t.jobs} (${columns}) VALUES ? ON DUPLICATE KEY UPDATE id = id`, [rows]);
  if (next.idempotencyKey === null) return { job: insertedRecord(next), created: true };
  // A next job whose idempotency key is taken becomes that retained job, as an enqueue would.
  const holder = (await selectInserted(c, t, [next])).byKey.get(idempotencyRef(next.name, next.idempotencyKey));
  if (!holder) throw new KeyHolderVanished();
  if (holder.id === next.id) return { job: insertedRecord(next), created: true };
  await execute(c, `UPDATE ${t.jobs} SET moved_to = ? WHERE id = ?`, [holder.id, lease.id]);
  return { job: holder, created: false };
}
