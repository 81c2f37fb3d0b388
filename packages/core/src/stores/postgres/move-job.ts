import type { InsertOutcome, LeaseRef, NewJob } from '../../engine/store.ts';
import { insertedRecord } from '../shared/inserted-record.ts';
import type { SqlClient, SqlQueryable } from './connection.ts';
import { readiedParents } from './flows.ts';
import { idempotencyRef, insertNew, keyHolders } from './insert-jobs.ts';
import type { Statements } from './statements.ts';

/** Settles the parent of `id`, a child that just ended in `tx` (`settle_parents`); resolves to the parents made ready. */
async function settleParents(tx: SqlQueryable, sql: Statements, id: string, now: Date): Promise<string[]> {
  await tx.query(sql.settleParents, [[id], now]);
  return readiedParents(await tx.query<{ readied: string | null }>(sql.readiedParents));
}

/** Thrown inside `moveJob`'s transaction to roll it back when the next job's key holder vanished. */
class KeyHolderVanished extends Error {}

/**
 * `Store.moveJob`, one transaction: the held job completed into `next`, and `next` inserted, or, when a
 * retained job holds `next`'s idempotency key, the held job moved into that job. A moved child settles its
 * parent in the same transaction; `settled` is then told the parents made ready.
 */
export async function moveJob(
  client: SqlClient,
  sql: Statements,
  lease: LeaseRef,
  next: NewJob,
  now: Date,
  settled: (readied: string[]) => void,
): Promise<InsertOutcome | null> {
  let readied: string[] = [];
  try {
    const outcome = await client.transaction(async (tx) => {
      const [from] = await tx.query<{ parent_id: string | null }>(sql.completeMovedJob, [
        lease.id,
        lease.leaseToken,
        next.id,
        now,
      ]);
      if (!from) return null;
      // A child's end settles its parent in the move's transaction.
      if (from.parent_id !== null) readied = await settleParents(tx, sql, lease.id, now);
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
    settled(readied);
    return outcome;
  } catch (error) {
    if (error instanceof KeyHolderVanished) return { job: null, created: false };
    throw error;
  }
}
