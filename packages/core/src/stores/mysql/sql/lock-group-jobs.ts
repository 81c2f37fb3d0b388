/**
 * Lock group jobs: a grouped claim's second locking read, when it found fewer groups than jobs it may lease
 * and some groups may run more than one. Locks each group's first `cap` ready jobs in claim order.
 *
 * Takes the `ClaimRequest` and the groups with their caps; runs in the limited claim's transaction. One
 * statement: the groups with a cap of one as rows of a `JSON_TABLE` list, each joined to its first job by one
 * subquery planned once, and a query of its own for each group with a larger cap, joined by `UNION ALL`; every
 * part reads `waiting_group_claim` alone. Locks: the jobs it returns, skipping those another transaction holds.
 * Returns them with their group (`group_read`) and the claimed columns.
 */
import type { ClaimRequest } from '../../../engine/store.ts';
import { WAITING_GROUP_CLAIM_INDEX } from '../baseline.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { CLAIMED_SELECT, claimedSelectOf } from './lock-ready-jobs.ts';

const IN_ORDER = 'ORDER BY priority DESC, order_key, tie_key, id';

/**
 * The statement and its values. A job has a `waiting_group` only while it waits, and so the group index alone
 * answers each part.
 */
export function lockGroupJobsQuery(
  t: Tables,
  request: ClaimRequest,
  groups: readonly { group: string; cap: number }[],
): { sql: string; values: unknown[] } {
  const ready = 'name = ? AND run_at <= ? AND version BETWEEN ? AND ?';
  const readyValues = [request.name, sqlDate(request.now), request.minVersion, request.maxVersion];
  const singles = groups.filter(({ cap }) => cap === 1).map(({ group }) => group);
  const parts: string[] = [];
  const values: unknown[] = [];
  if (singles.length > 0) {
    // The LIMIT (the number of groups) keeps the first ids a table of their own, so each subquery runs once.
    parts.push(`(SELECT o.job_group AS group_read, ${claimedSelectOf('j')}
       FROM (SELECT l.job_group, (
           SELECT f.id FROM ${t.jobs} AS f FORCE INDEX (${WAITING_GROUP_CLAIM_INDEX})
           WHERE ${ready} AND f.waiting_group = l.job_group ${IN_ORDER} LIMIT 1) AS first_id
         FROM JSON_TABLE(?, '$[*]' COLUMNS (
           job_group VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS l
         LIMIT ?) AS o
       JOIN ${t.jobs} AS j ON j.id = o.first_id
       WHERE j.state = 'waiting' FOR UPDATE SKIP LOCKED)`);
    values.push(...readyValues, JSON.stringify(singles), singles.length);
  }
  for (const { group, cap } of groups) {
    if (cap === 1) continue;
    parts.push(`(SELECT ? AS group_read, ${CLAIMED_SELECT} FROM ${t.jobs} FORCE INDEX (${WAITING_GROUP_CLAIM_INDEX})
       WHERE ${ready} AND waiting_group = ? ${IN_ORDER} LIMIT ? FOR UPDATE SKIP LOCKED)`);
    values.push(group, ...readyValues, group, cap);
  }
  return { sql: parts.join(' UNION ALL '), values };
}
