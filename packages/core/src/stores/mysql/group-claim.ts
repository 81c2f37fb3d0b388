/**
 * A grouped type's limited claim on MySQL/MariaDB: groups take turns from the type's cursor (`group_cursor` of
 * its settings row), as on PostgreSQL, so that a claim reads only the groups it passes.
 */
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import { type ClaimRequest, NO_GROUP } from '../../engine/store.ts';
import { ACTIVE_GROUPS_INDEX, WAITING_GROUP_CLAIM_INDEX, WAITING_GROUPS_INDEX } from './baseline.ts';
import { selectRows } from './connection.ts';
import { CLAIMED_SELECT, claimedSelectOf, countActiveSql, pickInOrder } from './job-queries.ts';
import { sqlDate } from './rows.ts';
import type { Tables } from './tables.ts';

/** The limits and the cursor of a grouped type, from its settings row. */
export interface TurnSettings {
  concurrency: number | null;
  groupConcurrency: number | null;
  /** The last group the type's latest grouped claim leased from; `null` before the first. */
  groupCursor: string | null;
}

/** The jobs a grouped claim picked (locked, to be leased), and where the type's cursor moves. */
export interface PickedInTurns {
  rows: RowDataPacket[];
  cursor: string | null;
}

const IN_ORDER = 'ORDER BY priority DESC, order_key, tie_key, id';

/** A stretch of the groups in name order: after `after` (from the first when `null`), up to `upTo` inclusive. */
interface Stretch {
  after: string | null;
  upTo: string | null;
}

/**
 * One statement that walks up to `size` groups with waiting jobs from `stretch` in name order along
 * `waiting_groups` (one group: its least name past the cursor, a single index probe; more: a loose index scan,
 * one probe per group) and, for each group passed, reads its active jobs when a `groupConcurrency` limit applies
 * (along `active_groups`) and its first ready job (along `waiting_group_claim`), which it locks when the group
 * has room. It yields a row per group passed, in name order (`group_read`, `group_active`), with the job's
 * claimed columns, NULL where the group has no room or no ready job, or where another transaction holds that
 * job (SKIP LOCKED: the join picks a group's first job before it locks it, so such a group yields none to this
 * claim rather than its next job). With `countType`, each row also carries the type's active jobs
 * (`type_active`). The caller runs it while it holds the type's settings row, so no other limited claim of the
 * type starts a job between these counts and the lease.
 */
function walkQuery(
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

/**
 * The locking read of each group's first `cap` jobs that the request could take, in claim order, each row named
 * by its group (`group_read`): the groups with a cap of one as rows of a JSON list, each joined to its first job
 * by one subquery that is planned once; a group with a larger cap as a query of its own. They are joined by
 * UNION ALL. A job has a `waiting_group` only while it waits, and so the group index alone answers it.
 */
function candidatesQuery(
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

/**
 * Picks up to `room` jobs of a grouped type in turns, on a connection whose transaction holds the type's
 * settings row: walks the groups with waiting jobs in name order from just after the cursor, wrapping round
 * once to the cursor itself, and keeps the groups with room (`groupConcurrency` less the group's active jobs;
 * `NO_GROUP` has no cap) and a ready first job, until it has a group for each job it may lease. Each group with
 * ready jobs thus gets one turn per pass. A walk statement passes as many groups as the claim still needs or,
 * when groups without room have made it walk again, as many as it has passed so far if that is more, so that a
 * claim among many full groups takes a few statements, not one per group. When the groups kept are fewer than `room` and some
 * may run more than one job, it takes each group's first jobs up to its room, one round per group. The cursor
 * moves to the last group leased from. Under a `concurrency` limit the first walk that passes a group also
 * counts the type's active jobs, and `room` shrinks to what fits beside them. With no job with a group waiting,
 * jobs enqueued without one before the type had groups are picked in claim order.
 */
export async function pickInTurns(
  c: PoolConnection,
  t: Tables,
  request: ClaimRequest,
  settings: TurnSettings,
  limit: number,
): Promise<PickedInTurns> {
  const { concurrency, groupConcurrency, groupCursor } = settings;
  let room = limit;
  let typeActive: number | null = null;
  const open: { group: string; active: number; head: RowDataPacket }[] = [];
  let passedCount = 0;
  let wrapped = groupCursor === null;
  let stretch: Stretch = { after: groupCursor, upTo: null };
  while (open.length < room) {
    const size = Math.max(room - open.length, passedCount);
    const countType = concurrency !== null && typeActive === null;
    const { sql, values } = walkQuery(t, request, stretch, size, groupConcurrency, countType);
    const passed = await selectRows(c, sql, values);
    const last = passed[passed.length - 1];
    if (countType && last !== undefined) {
      typeActive = Number(last.type_active);
      room = Math.min(room, concurrency - typeActive);
    }
    passedCount += passed.length;
    for (const row of passed) {
      if (row.id !== null) open.push({ group: String(row.group_read), active: Number(row.group_active), head: row });
    }
    // A walk that passed as many groups as it asked for may have more after them.
    if (last !== undefined && passed.length === size) {
      stretch = { after: String(last.group_read), upTo: stretch.upTo };
    } else if (wrapped) {
      break;
    } else {
      wrapped = true;
      stretch = { after: null, upTo: groupCursor };
    }
  }
  if (room <= 0) return { rows: [], cursor: groupCursor };
  if (passedCount === 0) {
    // No job with a group waits: jobs enqueued without one before the type had groups are picked in claim order.
    return {
      rows: await pickInOrder(c, t, request, room, typeActive === null ? concurrency : null),
      cursor: groupCursor,
    };
  }
  const groups = open.slice(0, room).map(({ group, active, head }) => ({
    group,
    head,
    cap: groupConcurrency === null || group === NO_GROUP ? room : Math.min(room, groupConcurrency - active),
  }));
  const candidates = new Map(groups.map(({ group, head }) => [group, [head]]));
  if (groups.length < room && groups.some(({ cap }) => cap > 1)) {
    const { sql, values } = candidatesQuery(t, request, groups);
    for (const group of groups) candidates.set(group.group, []);
    for (const row of await selectRows(c, sql, values)) candidates.get(String(row.group_read))?.push(row);
  }
  const rows: RowDataPacket[] = [];
  let lastPlace = -1;
  for (let round = 0; rows.length < room; round++) {
    let any = false;
    for (const [place, { group }] of groups.entries()) {
      const row = candidates.get(group)?.[round];
      if (row === undefined) continue;
      any = true;
      rows.push(row);
      lastPlace = Math.max(lastPlace, place);
      if (rows.length >= room) break;
    }
    if (!any) break;
  }
  return { rows, cursor: lastPlace < 0 ? groupCursor : (groups[lastPlace]?.group ?? groupCursor) };
}
