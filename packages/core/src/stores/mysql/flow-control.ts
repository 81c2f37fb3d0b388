/** Flow control on MySQL/MariaDB: the per-type settings table and the limited claim (see `FlowControlStore`). */
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import type {
  ClaimedRecord,
  ClaimRequest,
  LimitedClaim,
  QueueSettings,
  QueueSettingsChange,
} from '../../engine/store.ts';
import { afterStarts, type FlowState, rateWindow, takesTurns } from '../shared/limited-claim.ts';
import { DELAYED_INDEX } from './baseline.ts';
import { execute, type Queryable, selectRows } from './connection.ts';
import { pickInTurns } from './group-claim.ts';
import { leaseJobs, pickInOrder, promoteDueJobs } from './job-queries.ts';
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
 * See `FlowControlStore.claimLimitedJobs`, on a connection in a transaction: locks the type's settings row, so
 * that the type's limited claims run one at a time, then counts, picks (in turns for a grouped type, see
 * `pickInTurns`; else in claim order), leases, and records the starts and the cursor in the settings row. The
 * rate window, the room and the log are reckoned as on the other stores (limited-claim.ts). `plainClaim` is the
 * store's claim, run on that connection for a type with no settings.
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
    `SELECT ${SETTINGS_SELECT}, group_cursor, EXISTS (SELECT 1 FROM ${t.jobs} FORCE INDEX (${DELAYED_INDEX})
       WHERE name = ? AND delayed_until <= ? AND state = 'delayed') AS due
     FROM ${t.queueSettings} WHERE name = ? FOR UPDATE`,
    [name, sqlDate(now), name],
  );
  if (!row) return { jobs: await plainClaim(c, request), paused: false, nextStartAt: null };
  const settings = toFlowState(row);
  if (settings.paused) return { jobs: [], paused: true, nextStartAt: null };
  const nowMs = now.getTime();
  const rate = rateWindow(settings, nowMs);
  const room = Math.min(request.limit, rate.allowed);
  if (room <= 0) return { jobs: [], paused: false, nextStartAt: rate.nextStartAt };
  // Due delayed jobs move into the waiting range first, as a plain claim's first step moves them.
  if (Number(row.due) === 1) await promoteDueJobs(c, t, name, now);
  const turns = takesTurns(settings);
  const groupCursor = row.group_cursor === null ? null : String(row.group_cursor);
  const picked = turns
    ? await pickInTurns(c, t, request, { ...settings, groupCursor }, room)
    : { rows: await pickInOrder(c, t, request, room, settings.concurrency), cursor: groupCursor };
  if (picked.rows.length === 0) return { jobs: [], paused: false, nextStartAt: null };
  // The rows stay locked by this transaction, so they are leased as read.
  await leaseJobs(
    c,
    t,
    picked.rows.map((r) => String(r.id)),
    request,
  );
  const started = afterStarts(settings, rate, picked.rows.length, nowMs);
  // Only a rate limit's log and the cursor change: a claim under a concurrency limit alone writes nothing more.
  if (settings.rateLimit !== null || turns) {
    await execute(
      c,
      `UPDATE ${t.queueSettings} SET recent_starts = ?, last_turn = last_turn + ?, group_cursor = ? WHERE name = ?`,
      [JSON.stringify(started.recentStarts), picked.rows.length, picked.cursor, name],
    );
  }
  return {
    jobs: picked.rows.map((r) => claimedRecord(r, request)),
    paused: false,
    nextStartAt: started.nextStartAt,
  };
}
