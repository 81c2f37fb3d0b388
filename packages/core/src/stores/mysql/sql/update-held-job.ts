/**
 * Update a held job: the fenced single-row `UPDATE` behind `failJob`, `recordProgress` and
 * `updatePayload`, outside any transaction: `… SET <set>, updated_at = ? WHERE <FENCE>`, the fence being the
 * row's id, the lease's token, the state `active` and a lease unexpired at `now`.
 *
 * Takes the lease, `now`, the `SET` list and its values, and a further condition (`also`, SQL without values)
 * if any. Returns whether the lease held: `affectedRows` counts
 * the matched row (the pool connects with `FOUND_ROWS`), and nothing is read back. Guarantees: a stale worker
 * (token replaced, lease expired) changes no row.
 */
import type { LeaseRef } from '../../../engine/store.ts';
import { execute, type Queryable } from '../connection.ts';
import { FENCE, fenceValues } from '../job-queries.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function updateHeldJob(
  db: Queryable,
  t: Tables,
  lease: LeaseRef,
  now: Date,
  change: { set: string; values: readonly unknown[]; also?: string },
): Promise<boolean> {
  const also = change.also === undefined ? '' : ` AND ${change.also}`;
  const updated = await execute(db, `UPDATE ${t.jobs} SET ${change.set}, updated_at = ? WHERE ${FENCE}${also}`, [
    ...change.values,
    sqlDate(now),
    ...fenceValues(lease, now),
  ]);
  return updated.affectedRows === 1;
}
