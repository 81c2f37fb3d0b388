/**
 * List children: `FlowStore.listChildren`, one `SELECT` through the `children` index: the direct children of
 * one parent, in enqueue order (by id), after `afterId` when given, at most `limit`. Takes no locks.
 */
import type { JobRecord } from '../../../engine/store.ts';
import { CHILDREN_INDEX } from '../baseline.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { JOB_SELECT, jobRow } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function listChildren(
  db: Queryable,
  t: Tables,
  parentId: string,
  page: { afterId?: string; limit: number },
): Promise<JobRecord[]> {
  const after = page.afterId === undefined ? '' : 'AND id > ?';
  const rows = await selectRows(
    db,
    `SELECT ${JOB_SELECT} FROM ${t.jobs} FORCE INDEX (${CHILDREN_INDEX})
       WHERE parent_id = ? ${after} ORDER BY id LIMIT ?`,
    [parentId, ...(page.afterId === undefined ? [] : [page.afterId]), Math.max(0, Math.floor(page.limit))],
  );
  return rows.map(jobRow);
}
