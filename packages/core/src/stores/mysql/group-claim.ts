/**
 * A grouped type's limited claim on MySQL/MariaDB: groups take turns from the type's cursor (`group_cursor` of
 * its settings row), as on PostgreSQL, so that a claim reads only the groups it passes.
 */
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import { type ClaimRequest, NO_GROUP } from '../../engine/store.ts';
import { selectRows } from './connection.ts';
import { lockGroupHolders, readHeldGroups } from './sql/lock-group-holders.ts';
import { lockGroupJobsQuery } from './sql/lock-group-jobs.ts';
import { lockReadyJobs } from './sql/lock-ready-jobs.ts';
import { type Stretch, walkGroupsQuery } from './sql/walk-groups.ts';
import type { Tables } from './tables.ts';

/** The limits and the cursor of a grouped type, from its settings row. */
export interface TurnSettings {
  concurrency: number | null;
  groupConcurrency: number | null;
  /** `'strict'`: a job back in the queue after an attempt holds its group (sql/lock-group-holders.ts). */
  groupOrder: 'strict' | null;
  /** The last group the type's latest grouped claim leased from; `null` before the first. */
  groupCursor: string | null;
}

/** The jobs a grouped claim picked (locked, to be leased), and where the type's cursor moves. */
export interface PickedInTurns {
  rows: RowDataPacket[];
  cursor: string | null;
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
 * jobs enqueued without one before the type had groups are picked in claim order. Under strict group order a
 * held group is passed over, and its holder, once ready, is taken ahead of the walk.
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
  const held: Map<string, RowDataPacket | null> =
    settings.groupOrder === 'strict' ? await lockGroupHolders(c, t, request) : new Map();
  for (const [group, head] of held) if (head) open.push({ group, active: 0, head });
  let passedCount = 0;
  let wrapped = groupCursor === null;
  let stretch: Stretch = { after: groupCursor, upTo: null };
  while (open.length < room) {
    const size = Math.max(room - open.length, passedCount);
    const countType = concurrency !== null && typeActive === null;
    const { sql, values } = walkGroupsQuery(t, request, stretch, size, groupConcurrency, countType);
    const passed = await selectRows(c, sql, values);
    const last = passed[passed.length - 1];
    if (countType && last !== undefined) {
      typeActive = Number(last.type_active);
      room = Math.min(room, concurrency - typeActive);
    }
    passedCount += passed.length;
    for (const row of passed) {
      const group = String(row.group_read);
      if (row.id !== null && !held.has(group)) open.push({ group, active: Number(row.group_active), head: row });
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
  // A job that was active when the holders were read may have failed since, after the walk counted its group
  // free: the groups held now are read again, and a group held since is passed over.
  if (settings.groupOrder === 'strict' && open.length > 0) {
    const heldNow = await readHeldGroups(c, t, request.name);
    open.splice(0, open.length, ...open.filter(({ group, head }) => !heldNow.has(group) || held.get(group) === head));
  }
  if (room <= 0) return { rows: [], cursor: groupCursor };
  if (passedCount === 0 && open.length === 0) {
    // No job with a group waits: jobs enqueued without one before the type had groups are picked in claim order.
    return {
      rows: await lockReadyJobs(c, t, request, room, typeActive === null ? concurrency : null),
      cursor: groupCursor,
    };
  }
  const groups = open.slice(0, room).map(({ group, active, head }) => ({
    group,
    head,
    cap: held.has(group)
      ? 1
      : groupConcurrency === null || group === NO_GROUP
        ? room
        : Math.min(room, groupConcurrency - active),
  }));
  const candidates = new Map(groups.map(({ group, head }) => [group, [head]]));
  if (groups.length < room && groups.some(({ cap }) => cap > 1)) {
    const { sql, values } = lockGroupJobsQuery(t, request, groups);
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
