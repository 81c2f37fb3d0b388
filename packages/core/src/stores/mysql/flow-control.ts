/** Flow control on MySQL/MariaDB: the per-type settings table and the limited claim (see `FlowControlStore`). */
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import type {
  ClaimedRecord,
  ClaimRequest,
  LimitedClaim,
  QueueSettings,
  QueueSettingsChange,
} from '../../engine/store.ts';
import { claimUnderSettings, type FlowState } from '../shared/limited-claim.ts';
import { execute, type Queryable, selectRows } from './connection.ts';
import { CLAIMED_SELECT, claimedSelectOf, leaseJobs, PROMOTE_BATCH, promoteDueJobsSql } from './job-queries.ts';
import { DELAYED_INDEX, WAITING_GROUP_CLAIM_INDEX, WAITING_GROUPS_INDEX } from './migrations.ts';
import { claimedRecord, readDate, sqlDate } from './rows.ts';
import type { Tables } from './tables.ts';

const SETTINGS_SELECT =
  'name, paused, concurrency, rate_max, rate_per_ms, group_concurrency, grouped, recent_starts, last_turn, updated_at';

function toFlowState(row: RowDataPacket): FlowState {
  return {
    name: String(row.name),
    paused: Number(row.paused) === 1,
    concurrency: row.concurrency === null ? null : Number(row.concurrency),
    rateLimit: row.rate_max === null ? null : { max: Number(row.rate_max), perMs: Number(row.rate_per_ms) },
    groupConcurrency: row.group_concurrency === null ? null : Number(row.group_concurrency),
    grouped: Number(row.grouped) === 1,
    updatedAt: readDate(row.updated_at),
    recentStarts: (JSON.parse(String(row.recent_starts)) as number[]).map(Number),
    lastTurn: Number(row.last_turn),
  };
}

function toSettings(row: RowDataPacket): QueueSettings {
  const { recentStarts: _starts, lastTurn: _turn, ...settings } = toFlowState(row);
  return settings;
}

/** See `FlowControlStore.listQueueSettings`. */
export async function listQueueSettings(db: Queryable, t: Tables, name?: string): Promise<QueueSettings[]> {
  const where = name === undefined ? '' : 'WHERE name = ?';
  const rows = await selectRows(db, `SELECT ${SETTINGS_SELECT} FROM ${t.queueSettings} ${where} ORDER BY name`, [
    ...(name === undefined ? [] : [name]),
  ]);
  return rows.map(toSettings);
}

/** See `FlowControlStore.updateQueueSettings`: one upsert, then the row read back on the same connection. */
export async function updateQueueSettings(
  c: PoolConnection,
  t: Tables,
  name: string,
  change: QueueSettingsChange,
  now: Date,
): Promise<QueueSettings> {
  const sets: string[] = ['updated_at = VALUES(updated_at)'];
  const values: unknown[] = [];
  if (change.paused !== undefined) sets.push('paused = VALUES(paused)');
  if (change.concurrency !== undefined) sets.push('concurrency = VALUES(concurrency)');
  if (change.rateLimit !== undefined) sets.push('rate_max = VALUES(rate_max), rate_per_ms = VALUES(rate_per_ms)');
  if (change.groupConcurrency !== undefined) sets.push('group_concurrency = VALUES(group_concurrency)');
  if (change.grouped) sets.push('grouped = 1');
  values.push(
    name,
    change.paused ? 1 : 0,
    change.concurrency ?? null,
    change.rateLimit?.max ?? null,
    change.rateLimit?.perMs ?? null,
    change.groupConcurrency ?? null,
    change.grouped ? 1 : 0,
    sqlDate(now),
  );
  await execute(
    c,
    `INSERT INTO ${t.queueSettings}
       (name, paused, concurrency, rate_max, rate_per_ms, group_concurrency, grouped, recent_starts, last_turn, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, '[]', 0, ?)
     ON DUPLICATE KEY UPDATE ${sets.join(', ')}`,
    values,
  );
  const [row] = await selectRows(c, `SELECT ${SETTINGS_SELECT} FROM ${t.queueSettings} WHERE name = ?`, [name]);
  return toSettings(row as RowDataPacket);
}

/**
 * The locking read of each group's first `cap` jobs that `ready` (values `readyValues`) matches, in claim order,
 * each row named by its group (`job_group_read`). The groups with a cap of one are rows of a JSON list, each
 * joined to its first job by one subquery that is planned once; a group with a larger cap is a query of its own,
 * planned apiece. They are joined by UNION ALL. The join picks a group's first job before it locks it, so a group
 * whose first job another transaction holds yields none to this claim instead of its next job. `ready` leaves
 * the state out: a job has a `waiting_group` only while it waits, and so the group index alone answers it.
 */
function candidatesQuery(
  t: Tables,
  groups: readonly { group: string; cap: number }[],
  ready: string,
  readyValues: readonly unknown[],
): { sql: string; values: unknown[] } {
  const inOrder = 'ORDER BY priority DESC, order_key, tie_key, id';
  const singles = groups.filter(({ cap }) => cap === 1).map(({ group }) => group);
  const parts: string[] = [];
  const values: unknown[] = [];
  if (singles.length > 0) {
    // The LIMIT (the number of groups) keeps the first ids a table of their own, so each subquery runs once.
    parts.push(`(SELECT o.job_group AS job_group_read, ${claimedSelectOf('j')}
       FROM (SELECT l.job_group, (
           SELECT f.id FROM ${t.jobs} AS f FORCE INDEX (${WAITING_GROUP_CLAIM_INDEX})
           WHERE ${ready} AND f.waiting_group = l.job_group ${inOrder} LIMIT 1) AS first_id
         FROM JSON_TABLE(?, '$[*]' COLUMNS (
           job_group VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS l
         LIMIT ?) AS o
       JOIN ${t.jobs} AS j ON j.id = o.first_id
       WHERE j.state = 'waiting' FOR UPDATE SKIP LOCKED)`);
    values.push(...readyValues, JSON.stringify(singles), singles.length);
  }
  for (const { group, cap } of groups) {
    if (cap === 1) continue;
    parts.push(`(SELECT ? AS job_group_read, ${CLAIMED_SELECT} FROM ${t.jobs} FORCE INDEX (${WAITING_GROUP_CLAIM_INDEX})
       WHERE ${ready} AND waiting_group = ? ${inOrder} LIMIT ? FOR UPDATE SKIP LOCKED)`);
    values.push(group, ...readyValues, group, cap);
  }
  return { sql: parts.join(' UNION ALL '), values };
}

/**
 * See `FlowControlStore.claimLimitedJobs`, on a connection in a transaction: locks the type's settings row, then
 * runs `claimUnderSettings`. `plainClaim` is the store's claim, run on that connection.
 */
export async function claimLimitedJobs(
  c: PoolConnection,
  t: Tables,
  request: ClaimRequest,
  plainClaim: (c: PoolConnection, request: ClaimRequest) => Promise<ClaimedRecord[]>,
): Promise<LimitedClaim> {
  const { name, now } = request;
  // The row says too whether any of the type's delayed jobs is due, so that a claim with none skips promoting.
  const [row] = await selectRows(
    c,
    `SELECT ${SETTINGS_SELECT}, EXISTS (SELECT 1 FROM ${t.jobs} FORCE INDEX (${DELAYED_INDEX})
       WHERE name = ? AND delayed_until <= ? AND state = 'delayed') AS due
     FROM ${t.queueSettings} WHERE name = ? FOR UPDATE`,
    [name, sqlDate(now), name],
  );
  if (!row) return { jobs: await plainClaim(c, request), paused: false, nextStartAt: null };
  const ready = `name = ? AND run_at <= ? AND version BETWEEN ? AND ?`;
  const readyValues = [name, sqlDate(now), request.minVersion, request.maxVersion];
  const locked = new Map<string, RowDataPacket>();
  return claimUnderSettings(request, toFlowState(row), {
    countActive: async () => {
      const [count] = await selectRows(
        c,
        `SELECT COUNT(*) AS count FROM ${t.jobs} FORCE INDEX (listing) WHERE name = ? AND state = 'active'`,
        [name],
      );
      return Number(count?.count ?? 0);
    },
    readyGroups: async (countActive) => {
      // The type's due delayed jobs move into the waiting range first, as a claim's first step moves them.
      const promote = promoteDueJobsSql(t);
      if (Number(row.due) === 1)
        while ((await execute(c, promote, [name, sqlDate(now)])).affectedRows === PROMOTE_BATCH);
      // One probe per group along the waiting-groups index (`GROUP BY` on it is a loose index scan: a jump from
      // group to group, and one more over the NULL of jobs not waiting, which HAVING drops), not a read of every
      // waiting job. The groups' active jobs, when asked for, are counted in the same statement.
      const active = `LEFT JOIN (SELECT job_group, COUNT(*) AS active FROM ${t.jobs} FORCE INDEX (listing)
           WHERE name = ? AND state = 'active' AND job_group IS NOT NULL GROUP BY job_group) AS a
         ON a.job_group = w.job_group`;
      const rows = await selectRows(
        c,
        `SELECT w.job_group, g.last_turn, ${countActive ? 'a.active' : 'NULL AS active'} FROM (
           SELECT waiting_group AS job_group FROM ${t.jobs} FORCE INDEX (${WAITING_GROUPS_INDEX})
           WHERE name = ? GROUP BY name, waiting_group HAVING job_group IS NOT NULL) AS w
         LEFT JOIN ${t.queueGroups} AS g ON g.name = ? AND g.job_group = w.job_group
         ${countActive ? active : ''}`,
        [name, name, ...(countActive ? [name] : [])],
      );
      return rows.map((r) => ({
        group: String(r.job_group),
        lastTurn: r.last_turn === null ? null : Number(r.last_turn),
        active: Number(r.active ?? 0),
      }));
    },
    candidates: async (groups) => {
      // One statement for every group. The rows stay locked by this transaction, so `lease` leases them as read.
      const byGroup = new Map<string, string[]>(groups.map(({ group }) => [group, []]));
      if (groups.length === 0) return byGroup;
      const { sql, values } = candidatesQuery(t, groups, ready, readyValues);
      const rows = await selectRows(c, sql, values);
      for (const r of rows) {
        byGroup.get(String(r.job_group_read))?.push(String(r.id));
        locked.set(String(r.id), r);
      }
      return byGroup;
    },
    lease: async (ids) => {
      const rows = ids.flatMap((id) => locked.get(id) ?? []);
      if (rows.length === 0) return [];
      await leaseJobs(
        c,
        t,
        rows.map((r) => String(r.id)),
        request,
      );
      return rows.map((r) => claimedRecord(r, request));
    },
    claimInOrder: (limit) => plainClaim(c, { ...request, limit }),
    save: async ({ recentStarts, lastTurn, groupTurns }) => {
      await execute(c, `UPDATE ${t.queueSettings} SET recent_starts = ?, last_turn = ? WHERE name = ?`, [
        JSON.stringify(recentStarts),
        lastTurn,
        name,
      ]);
      if (groupTurns.size === 0) return;
      await execute(
        c,
        `INSERT INTO ${t.queueGroups} (name, job_group, last_turn) VALUES ?
         ON DUPLICATE KEY UPDATE last_turn = VALUES(last_turn)`,
        [[...groupTurns].map(([group, turn]) => [name, group, turn])],
      );
    },
  });
}
