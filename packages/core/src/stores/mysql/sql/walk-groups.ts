/**
 * Walk groups: a grouped claim's locking read of the groups it passes. One statement walks up to `size` groups
 * with waiting jobs of one type, in name order, from a stretch of the names (`waiting_groups`: one group is a
 * single index probe, more a loose index scan), and for each reads its active jobs (`active_groups`, under a
 * `groupConcurrency` limit) and locks its first ready job (`waiting_group_claim`) when the group has room.
 *
 * Takes the `ClaimRequest`, the stretch, the size, the group limit and whether to count the type's active jobs;
 * runs in the limited claim's transaction, which holds the type's settings row. Returns a row per group passed,
 * in name order (`group_read`, `group_active`, `type_active`, and the claimed columns, NULL where the group has
 * no room or no ready job, or where another transaction holds that job). Locks: the jobs it returns.
 */
import type { ClaimRequest } from '../../../engine/store.ts';
import { ACTIVE_GROUPS_INDEX, WAITING_GROUP_CLAIM_INDEX, WAITING_GROUPS_INDEX } from '../baseline.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { claimedSelectOf, countActiveSql } from './lock-ready-jobs.ts';

/** A stretch of the groups in name order: after `after` (from the first when `null`), up to `upTo` inclusive. */
export interface Stretch {
  after: string | null;
  upTo: string | null;
}

/**
 * The statement and its values. SKIP LOCKED: the join picks a group's first job before it locks it, so a group
 * whose first job another transaction holds yields none to this claim rather than its next job. The caller
 * holds the type's settings row, so no other limited claim of the type starts a job between these counts and
 * the lease.
 */
export function walkGroupsQuery(
  t: Tables,
  request: ClaimRequest,
  stretch: Stretch,
  size: number,
  groupConcurrency: number | null,
  countType: boolean,
): { sql: string; values: unknown[] } {
  const range = `w.name = ? AND w.waiting_group ${stretch.after === null ? ">= ''" : '> ?'}
    ${stretch.upTo === null ? '' : 'AND w.waiting_group <= ?'}`;
  const walk =
    size === 1
      ? `SELECT MIN(w.waiting_group) AS job_group FROM ${t.jobs} AS w FORCE INDEX (${WAITING_GROUPS_INDEX})
         WHERE ${range}`
      : `SELECT w.waiting_group AS job_group FROM ${t.jobs} AS w FORCE INDEX (${WAITING_GROUPS_INDEX})
         WHERE ${range} GROUP BY w.name, w.waiting_group LIMIT ?`;
  const limited = groupConcurrency !== null;
  const active = limited
    ? `(SELECT COUNT(*) FROM ${t.jobs} AS a FORCE INDEX (${ACTIVE_GROUPS_INDEX})
        WHERE a.name = ? AND a.active_group = g.job_group)`
    : '0';
  const sql = `SELECT o.job_group AS group_read, o.active AS group_active,
      ${countType ? countActiveSql(t) : 'NULL'} AS type_active, ${claimedSelectOf('j')}
    FROM (SELECT g.job_group, ${active} AS active,
        (SELECT f.id FROM ${t.jobs} AS f FORCE INDEX (${WAITING_GROUP_CLAIM_INDEX})
          WHERE f.name = ? AND f.run_at <= ? AND f.version BETWEEN ? AND ? AND f.waiting_group = g.job_group
          ORDER BY f.priority DESC, f.order_key, f.tie_key, f.id LIMIT 1) AS first_id
      FROM (${walk}) AS g WHERE g.job_group IS NOT NULL) AS o
    LEFT JOIN ${t.jobs} AS j ON j.id = o.first_id AND j.state = 'waiting'
      ${limited ? "AND (o.job_group = '' OR o.active < ?)" : ''}
    ORDER BY o.job_group FOR UPDATE SKIP LOCKED`;
  const values = [
    ...(countType ? [request.name] : []),
    ...(limited ? [request.name] : []),
    request.name,
    sqlDate(request.now),
    request.minVersion,
    request.maxVersion,
    request.name,
    ...(stretch.after === null ? [] : [stretch.after]),
    ...(stretch.upTo === null ? [] : [stretch.upTo]),
    ...(size === 1 ? [] : [size]),
    ...(limited ? [groupConcurrency] : []),
  ];
  return { sql, values };
}
