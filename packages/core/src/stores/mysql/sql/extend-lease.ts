/**
 * Extend a lease: `Store.extendLease`, fenced (`FENCE`: the row's id, the lease's token, `active`, a lease
 * unexpired at `now`), outside any transaction.
 *
 * Takes the lease, the expiry asked for and `now`. Returns the expiry the lease has after it, as stored: the one
 * asked for, or the attempt's deadline (`attempt_deadline`, a time limit) where that is earlier; `null` when the
 * lease did not hold, and then nothing changed.
 *
 * MariaDB's `UPDATE` returns no rows, so the usual extension, which the deadline does not cap (every job without
 * a time limit, and one with a limit well before it), is the one `UPDATE` that names its expiry, which the
 * answer then is. Only an extension the deadline caps reads the deadline and writes it (two statements more).
 * The deadline read with the lease's token is that lease's own: a claim sets it with the token, and nothing
 * else changes it.
 */
import type { LeaseRef } from '../../../engine/store.ts';
import { execute, type Queryable, selectRows } from '../connection.ts';
import { FENCE, fenceValues } from '../job-queries.ts';
import { readDate, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function extendLease(
  db: Queryable,
  t: Tables,
  lease: LeaseRef,
  leaseExpiresAt: Date,
  now: Date,
): Promise<Date | null> {
  const [asked, at] = [sqlDate(leaseExpiresAt), sqlDate(now)];
  const uncapped = await execute(
    db,
    `UPDATE ${t.jobs} SET lease_expires_at = ?, updated_at = ?
       WHERE ${FENCE} AND (attempt_deadline IS NULL OR attempt_deadline >= ?)`,
    [asked, at, ...fenceValues(lease, now), asked],
  );
  if (uncapped.affectedRows === 1) return leaseExpiresAt;
  const [held] = await selectRows(db, `SELECT attempt_deadline FROM ${t.jobs} WHERE ${FENCE}`, fenceValues(lease, now));
  if (held?.attempt_deadline === null || held?.attempt_deadline === undefined) return null;
  const capped = await execute(
    db,
    `UPDATE ${t.jobs} SET lease_expires_at = attempt_deadline, updated_at = ? WHERE ${FENCE}`,
    [at, ...fenceValues(lease, now)],
  );
  return capped.affectedRows === 1 ? readDate(held.attempt_deadline) : null;
}
