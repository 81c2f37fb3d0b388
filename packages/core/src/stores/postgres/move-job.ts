import type { InsertOutcome, LeaseRef, NewJob } from '../../engine/store.ts';
import { insertedRecord } from '../shared/inserted-record.ts';
import type { SqlClient } from './connection.ts';
import { idempotencyRef, insertNew, keyHolders } from './insert-jobs.ts';
import type { Statements } from './statements.ts';

/** Thrown inside `moveJob`'s transaction to roll it back when the next job's key holder vanished. */
class KeyHolderVanished extends Error {}

/**
 * `Store.moveJob`, one transaction: the held job completed into `next`, and `next` inserted, or, when a
 * retained job holds `next`'s idempotency key, the held job moved into that job.
 */
export async function moveJob(
  client: SqlClient,
  sql: Statements,
  lease: LeaseRef,
  next: NewJob,
  now: Date,
): Promise<InsertOutcome | null> {
  try {
    return await client.transaction(async (tx) => {
      const [from] = await tx.query(sql.completeMovedJob, [lease.id, lease.leaseToken, next.id, now]);
      if (!from) return null;
      const [inserted] = await insertNew(tx, sql, [next]);
      if (inserted) {
        await tx.query(sql.setMovedFrom, [inserted.id, lease.id]);
        return { job: insertedRecord({ ...inserted, movedFrom: lease.id }), created: true };
      }
      // `next` carries an idempotency key a retained job holds: the job moves into that job.
      const holder = (await keyHolders(tx, sql, [next])).get(idempotencyRef(next.name, next.idempotencyKey ?? ''));
      if (!holder) throw new KeyHolderVanished();
      await tx.query(sql.setMovedTo, [lease.id, holder.id]);
      return { job: holder, created: false };
    });
  } catch (error) {
    if (error instanceof KeyHolderVanished) return { job: null, created: false };
    throw error;
  }
}
