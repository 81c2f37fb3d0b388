/**
 * Retry dead jobs: `Store.retryDeadJobs`, one `UPDATE` of the dead jobs of a type, or with given ids, back to
 * `waiting` at `now`, their attempts reset. Takes no lock beyond the statement's. Returns how many it retried.
 */
import { execute, type Queryable } from '../connection.ts';
import { RELEASE_LEASE } from '../job-queries.ts';
import { ORDER_KEY_SQL, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function retryDeadJobs(
  db: Queryable,
  t: Tables,
  target: { name?: string; ids?: readonly string[] },
  now: Date,
): Promise<number> {
  if (target.ids?.length === 0) return 0;
  const where = [`state = 'dead'`];
  const values: unknown[] = [sqlDate(now), now.getTime(), now.getTime(), sqlDate(now)];
  if (target.name !== undefined) {
    where.push('name = ?');
    values.push(target.name);
  }
  if (target.ids !== undefined) {
    where.push('id IN (?)');
    values.push(target.ids);
  }
  const retried = await execute(
    db,
    `UPDATE ${t.jobs}
         SET state = 'waiting', run_at = ?, order_key = ${ORDER_KEY_SQL}, attempts = 0, finished_at = NULL,
           ${RELEASE_LEASE}, updated_at = ?
         WHERE ${where.join(' AND ')}`,
    values,
  );
  return retried.affectedRows;
}
