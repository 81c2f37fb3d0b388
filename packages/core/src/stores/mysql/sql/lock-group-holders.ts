/**
 * Lock group holders: under strict group order, the jobs that hold their groups. A job holds its group while it
 * is back in the queue after an attempt (waiting or delayed with `attempts` above 0; an active job holds it as
 * any active job fills its group's room); then no other job of the group is claimed, and the holder is claimed
 * as soon as it is ready.
 *
 * Takes the `ClaimRequest`; runs in the limited claim's transaction, which holds the type's settings row. Two
 * statements: the held groups along `held_groups` (only jobs back in the queue after an attempt are in it), and,
 * when some holders are ready (due, of a version the claim reads, their group with no active job), those
 * holders locked `FOR UPDATE SKIP LOCKED`. Returns each held group (never `NO_GROUP`, which no limit holds)
 * with its holder's row when the claim may lease it now, else `null`. Locks: the rows it returns.
 *
 * `readHeldGroups` reads the held groups again, after the walk: a job active when the holders were read that
 * failed before the walk counted its group's active jobs holds its group without being counted by either.
 */
import type { RowDataPacket } from 'mysql2/promise';
import { type ClaimRequest, NO_GROUP } from '../../../engine/store.ts';
import { ACTIVE_GROUPS_INDEX, HELD_GROUPS_INDEX } from '../baseline.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { claimedSelectOf } from './lock-ready-jobs.ts';

export async function lockGroupHolders(
  c: Queryable,
  t: Tables,
  request: ClaimRequest,
): Promise<Map<string, RowDataPacket | null>> {
  const holders = await selectRows(
    c,
    `SELECT h.held_group AS group_read, h.id,
       h.state = 'waiting' AND h.run_at <= ? AND h.version BETWEEN ? AND ?
         AND NOT EXISTS (SELECT 1 FROM ${t.jobs} AS a FORCE INDEX (${ACTIVE_GROUPS_INDEX})
           WHERE a.name = h.name AND a.active_group = h.held_group) AS ready
     FROM ${t.jobs} AS h FORCE INDEX (${HELD_GROUPS_INDEX})
     WHERE h.name = ? AND h.held_group IS NOT NULL AND h.held_group <> ?`,
    [sqlDate(request.now), request.minVersion, request.maxVersion, request.name, NO_GROUP],
  );
  const held = new Map<string, RowDataPacket | null>();
  for (const row of holders) if (!held.has(String(row.group_read))) held.set(String(row.group_read), null);
  const ready = holders.filter((row) => Number(row.ready) === 1).map((row) => String(row.id));
  if (ready.length === 0) return held;
  const locked = await selectRows(
    c,
    `SELECT j.job_group AS group_read, ${claimedSelectOf('j')} FROM ${t.jobs} AS j
     WHERE j.id IN (${ready.map(() => '?').join(', ')}) AND j.state = 'waiting' AND j.run_at <= ?
     ORDER BY j.job_group FOR UPDATE SKIP LOCKED`,
    [...ready, sqlDate(request.now)],
  );
  for (const row of locked) if (held.get(String(row.group_read)) === null) held.set(String(row.group_read), row);
  return held;
}

/** The groups held now (never `NO_GROUP`), along `held_groups`. */
export async function readHeldGroups(c: Queryable, t: Tables, name: string): Promise<Set<string>> {
  const rows = await selectRows(
    c,
    `SELECT DISTINCT h.held_group AS group_read FROM ${t.jobs} AS h FORCE INDEX (${HELD_GROUPS_INDEX})
     WHERE h.name = ? AND h.held_group IS NOT NULL AND h.held_group <> ?`,
    [name, NO_GROUP],
  );
  return new Set(rows.map((row) => String(row.group_read)));
}
