/**
 * Revive parents: what retrying dead children does to parents that died of a child (`FlowStore`, "Retrying a
 * dead child"), in the retry's transaction (the caller's), after the children were made waiting.
 *
 * Takes the parents of the retried children and `now`. Of those, the ones `dead` with a `CHILD_FAILED` error
 * are locked; each one's descendants cancelled with `FLOW_CANCELLED` go back to waiting, level by level
 * through the `children` index (due at `now`, attempts reset, the lease cleared, the error kept); then each
 * parent on the way counts its children not ended: above 0 it is `waiting-children` again, at 0 waiting, its
 * `finished_at` cleared either way. A revived parent that is a child revives its own parent in turn, when
 * that one died of a child. Returns the names of the parents made ready (waiting and due at `now`).
 */
import type { PoolConnection } from 'mysql2/promise';
import { CHILD_FAILED_CODE, FLOW_CANCELLED_CODE } from '../../../engine/flow-store.ts';
import { notStartedState } from '../../shared/not-started.ts';
import { CHILDREN_INDEX } from '../baseline.ts';
import { execute, selectRows } from '../connection.ts';
import { RELEASE_LEASE } from '../job-queries.ts';
import { delayedUntil, ORDER_KEY_SQL, readDate, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { UNFINISHED_SQL } from './cancel-descendants.ts';

/** SQL: the code of the job's last error. */
const ERROR_CODE = `JSON_UNQUOTE(JSON_EXTRACT(error, '$.code'))`;

export async function reviveParents(
  c: PoolConnection,
  t: Tables,
  parentIds: readonly string[],
  now: Date,
): Promise<string[]> {
  const ready: string[] = [];
  for (let ids = [...new Set(parentIds)]; ids.length > 0; ) {
    const dead = await selectRows(
      c,
      `SELECT id, parent_id FROM ${t.jobs} WHERE id IN (?) AND state = 'dead' AND ${ERROR_CODE} = ? ORDER BY id FOR UPDATE`,
      [ids, CHILD_FAILED_CODE],
    );
    if (dead.length === 0) break;
    const parents = dead.map((row) => String(row.id));
    const revived = [...parents, ...(await reviveDescendants(c, t, parents, now))];
    ready.push(...(await recountChildren(c, t, revived, now)));
    ids = [...new Set(dead.flatMap((row) => (row.parent_id === null ? [] : [String(row.parent_id)])))];
  }
  return ready;
}

/** The descendants of `parents` cancelled with their flow, back to waiting; resolves to the parents among them. */
async function reviveDescendants(c: PoolConnection, t: Tables, parents: string[], now: Date): Promise<string[]> {
  const revivedParents: string[] = [];
  for (let level = parents; level.length > 0; ) {
    const rows = await selectRows(
      c,
      `SELECT id, child_count FROM ${t.jobs} FORCE INDEX (${CHILDREN_INDEX})
         WHERE parent_id IN (?) AND state = 'cancelled' AND ${ERROR_CODE} = ? ORDER BY id FOR UPDATE`,
      [level, FLOW_CANCELLED_CODE],
    );
    if (rows.length === 0) break;
    await execute(
      c,
      `UPDATE ${t.jobs} SET state = 'waiting', delayed_until = NULL, run_at = ?, order_key = ${ORDER_KEY_SQL},
           attempts = 0, finished_at = NULL, ${RELEASE_LEASE}, updated_at = ?
         WHERE id IN (?)`,
      [sqlDate(now), now.getTime(), now.getTime(), sqlDate(now), rows.map((row) => String(row.id))],
    );
    level = rows.filter((row) => Number(row.child_count) > 0).map((row) => String(row.id));
    revivedParents.push(...level);
  }
  return revivedParents;
}

/**
 * Each of `parents` `waiting-children` with its children not ended counted, or waiting when none is left.
 * Resolves to the names of those made ready.
 */
async function recountChildren(c: PoolConnection, t: Tables, parents: string[], now: Date): Promise<string[]> {
  const counts = await selectRows(
    c,
    `SELECT parent_id, COUNT(*) AS pending FROM ${t.jobs} FORCE INDEX (${CHILDREN_INDEX})
       WHERE parent_id IN (?) AND state IN ${UNFINISHED_SQL} GROUP BY parent_id`,
    [parents],
  );
  const pending = new Map(counts.map((row) => [String(row.parent_id), Number(row.pending)]));
  const rows = await selectRows(c, `SELECT id, name, run_at FROM ${t.jobs} WHERE id IN (?)`, [parents]);
  const ready: string[] = [];
  for (const row of rows) {
    const left = pending.get(String(row.id)) ?? 0;
    const runAt = readDate(row.run_at);
    const state = left > 0 ? 'waiting-children' : notStartedState(runAt, now);
    await execute(
      c,
      `UPDATE ${t.jobs} SET state = ?, delayed_until = ?, pending_children = ?, finished_at = NULL, updated_at = ?
         WHERE id = ?`,
      [state, left > 0 ? null : delayedUntil(state, runAt), left, sqlDate(now), String(row.id)],
    );
    if (state === 'waiting') ready.push(String(row.name));
  }
  return ready;
}
