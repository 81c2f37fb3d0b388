/**
 * Retry dead jobs: `Store.retryDeadJobs`, in one transaction (the caller's): the parents of the dead children
 * among them read, one `UPDATE` of the dead jobs of a type, or with given ids, back to `waiting` at `now`,
 * their attempts reset, then the parents that died of a child revived (revive-parents.ts). Returns how many it
 * retried, and the names of the parents made ready.
 */
import type { PoolConnection } from 'mysql2/promise';
import { execute, selectRows } from '../connection.ts';
import { RELEASE_LEASE } from '../job-queries.ts';
import { ORDER_KEY_SQL, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { reviveParents } from './revive-parents.ts';

export async function retryDeadJobs(
  c: PoolConnection,
  t: Tables,
  target: { name?: string; ids?: readonly string[] },
  now: Date,
): Promise<{ retried: number; ready: string[] }> {
  if (target.ids?.length === 0) return { retried: 0, ready: [] };
  const where = [`state = 'dead'`];
  const matching: unknown[] = [];
  if (target.name !== undefined) {
    where.push('name = ?');
    matching.push(target.name);
  }
  if (target.ids !== undefined) {
    where.push('id IN (?)');
    matching.push(target.ids);
  }
  const parents = await selectRows(
    c,
    `SELECT DISTINCT parent_id FROM ${t.jobs} WHERE ${where.join(' AND ')} AND parent_id IS NOT NULL`,
    matching,
  );
  const values = [sqlDate(now), now.getTime(), now.getTime(), sqlDate(now), ...matching];
  const retried = await execute(
    c,
    `UPDATE ${t.jobs}
         SET state = 'waiting', run_at = ?, order_key = ${ORDER_KEY_SQL}, attempts = 0, finished_at = NULL,
           ${RELEASE_LEASE}, updated_at = ?
         WHERE ${where.join(' AND ')}`,
    values,
  );
  if (parents.length === 0) return { retried: retried.affectedRows, ready: [] };
  const ready = await reviveParents(
    c,
    t,
    parents.map((row) => String(row.parent_id)),
    now,
  );
  return { retried: retried.affectedRows, ready };
}
