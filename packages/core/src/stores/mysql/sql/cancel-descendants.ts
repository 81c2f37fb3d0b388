/**
 * Cancel descendants: the unfinished children of parents being cancelled or gone dead, and theirs, level by
 * level, in the caller's transaction (`FlowStore`: cancelling a parent, a parent failed by a child).
 *
 * Takes the parents' ids and `now`. Each level is one locking read through the `children` index and one
 * `UPDATE` per parent: the job `cancelled` and finished, its lease cleared (a worker holding it loses it), the
 * error `flowCancelledError` (code `FLOW_CANCELLED`, naming its parent, with its own attempt) recorded and
 * appended to `errors`. Completed children, and children that ended otherwise, stay as they are; no parent is
 * settled, since every parent of a cancelled job is itself finishing.
 */
import type { PoolConnection } from 'mysql2/promise';
import { flowCancelledError } from '../../../engine/flow-store.ts';
import { CHILDREN_INDEX } from '../baseline.ts';
import { execute, selectRows } from '../connection.ts';
import { appendedErrorsSql } from '../error-history.ts';
import { RELEASE_LEASE } from '../job-queries.ts';
import { sqlDate, writeJson } from '../records.ts';
import type { Tables } from '../tables.ts';

/** The stored states of a job that has not finished. */
export const UNFINISHED_SQL = `('delayed', 'waiting', 'waiting-children', 'active')`;

export async function cancelDescendants(
  c: PoolConnection,
  t: Tables,
  parentIds: readonly string[],
  now: Date,
): Promise<void> {
  // The recorded error names the job's parent and the job's own attempt (`attempts`).
  const errorSql = `JSON_SET(?, '$.attempt', attempts)`;
  for (let parents = parentIds; parents.length > 0; ) {
    const rows = await selectRows(
      c,
      `SELECT id, parent_id, child_count FROM ${t.jobs} FORCE INDEX (${CHILDREN_INDEX})
         WHERE parent_id IN (?) AND state IN ${UNFINISHED_SQL} ORDER BY id FOR UPDATE`,
      [parents],
    );
    const byParent = new Map<string, string[]>();
    for (const row of rows)
      byParent.set(String(row.parent_id), [...(byParent.get(String(row.parent_id)) ?? []), String(row.id)]);
    for (const [parentId, ids] of byParent) {
      const error = writeJson(flowCancelledError(parentId, 0, now));
      await execute(
        c,
        `UPDATE ${t.jobs} SET state = 'cancelled', delayed_until = NULL, ${RELEASE_LEASE},
             errors = ${appendedErrorsSql(errorSql)}, error = ${errorSql}, finished_at = ?, updated_at = ?
           WHERE id IN (?)`,
        [error, error, sqlDate(now), sqlDate(now), ids],
      );
    }
    parents = rows.filter((row) => Number(row.child_count) > 0).map((row) => String(row.id));
  }
}
