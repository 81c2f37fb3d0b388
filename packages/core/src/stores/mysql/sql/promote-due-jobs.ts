/**
 * Promote due jobs: the claim's first step. Moves one type's delayed jobs whose run time has come into the
 * claim index's `waiting` range, where the claim's locking read finds them.
 *
 * Takes the type's name and the claim's `now`; runs in the claim's transaction. One statement moves up to
 * `PROMOTE_BATCH` jobs, earliest first, along `delayed_due`; it is repeated while it moves that many.
 * Locks: the rows it moves, until the transaction ends. Guarantees: no job of the type due by `now` is left
 * delayed, so none ranked before a claimed one is passed over.
 */
import { DELAYED_INDEX } from '../baseline.ts';
import { execute, type Queryable } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

/** Due delayed jobs one statement moves at most; the claim repeats it while it moves that many. */
export const PROMOTE_BATCH = 1000;

/** The statement. Values: name, now. */
export function promoteDueJobsSql(t: Tables): string {
  return `UPDATE ${t.jobs} FORCE INDEX (${DELAYED_INDEX}) SET state = 'waiting', delayed_until = NULL
    WHERE name = ? AND delayed_until <= ? AND state = 'delayed' ORDER BY delayed_until LIMIT ${PROMOTE_BATCH}`;
}

/**
 * A scalar subquery for a claim's first read: 1 when one of the name's delayed jobs is due by `now`, else 0, so
 * that a claim promotes only when there is something to promote. One probe of `delayed_due`, not a locking read.
 * Values: name, now.
 */
export function dueDelayedSql(t: Tables): string {
  return `EXISTS (SELECT 1 FROM ${t.jobs} FORCE INDEX (${DELAYED_INDEX})
    WHERE name = ? AND delayed_until <= ? AND state = 'delayed')`;
}

/**
 * Runs `promoteDueJobsSql` until it leaves none of the name's delayed jobs due, however many came due at once.
 * Resolves to the number of jobs it moved.
 */
export async function promoteDueJobs(c: Queryable, t: Tables, name: string, now: Date): Promise<number> {
  const promote = promoteDueJobsSql(t);
  let moved = 0;
  for (;;) {
    const { affectedRows } = await execute(c, promote, [name, sqlDate(now)]);
    moved += affectedRows;
    if (affectedRows < PROMOTE_BATCH) return moved;
  }
}
