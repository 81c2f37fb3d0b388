/**
 * Flow control on MySQL/MariaDB: the per-type settings table (see `FlowControlStore`). The limited claim that
 * reads it is sql/claim-limited-jobs.ts.
 */
import type { PoolConnection, RowDataPacket } from 'mysql2/promise';
import { breaksStrictOrder } from '../../engine/flow-control.ts';
import type { QueueSettings, QueueSettingsChange } from '../../engine/store.ts';
import type { FlowState } from '../shared/limited-claim.ts';
import { execute, type Queryable, selectRows } from './connection.ts';
import { RollBack } from './errors.ts';
import { readDate, sqlDate } from './records.ts';
import type { Tables } from './tables.ts';

/** The settings row's columns a claim or a listing reads. */
export const SETTINGS_SELECT =
  'name, paused, concurrency, rate_max, rate_per_ms, group_concurrency, group_order, grouped, recent_starts, last_turn, held_until, updated_at';

/** A settings row as the limited claim reckons with it (limited-claim.ts). */
export function toFlowState(row: RowDataPacket): FlowState {
  return {
    name: String(row.name),
    paused: Number(row.paused) === 1,
    concurrency: row.concurrency === null ? null : Number(row.concurrency),
    rateLimit: row.rate_max === null ? null : { max: Number(row.rate_max), perMs: Number(row.rate_per_ms) },
    groupConcurrency: row.group_concurrency === null ? null : Number(row.group_concurrency),
    groupOrder: row.group_order === 'strict' ? 'strict' : null,
    grouped: Number(row.grouped) === 1,
    heldUntil: row.held_until === null ? null : readDate(row.held_until),
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

/** Thrown inside `updateQueueSettings`'s transaction to roll back a change the store refuses. */
export class StrictOrderBroken extends RollBack {}

/**
 * See `FlowControlStore.updateQueueSettings`: one upsert, then the row read back on the same connection; in a
 * transaction, which a change of a group limit that leaves the row `breaksStrictOrder` rolls back by throwing
 * `StrictOrderBroken`.
 */
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
  if (change.groupOrder !== undefined) sets.push('group_order = VALUES(group_order)');
  if (change.grouped) sets.push('grouped = 1');
  // A hold only grows: a later one stored stays; `null` lifts it.
  if (change.heldUntil === null) sets.push('held_until = NULL');
  else if (change.heldUntil !== undefined) {
    sets.push('held_until = IF(held_until > VALUES(held_until), held_until, VALUES(held_until))');
  }
  values.push(
    name,
    change.paused ? 1 : 0,
    change.concurrency ?? null,
    change.rateLimit?.max ?? null,
    change.rateLimit?.perMs ?? null,
    change.groupConcurrency ?? null,
    change.grouped ? 1 : 0,
    sqlDate(now),
    change.heldUntil == null ? null : sqlDate(change.heldUntil),
    change.groupOrder ?? null,
  );
  await execute(
    c,
    `INSERT INTO ${t.queueSettings}
       (name, paused, concurrency, rate_max, rate_per_ms, group_concurrency, grouped, recent_starts, last_turn, updated_at,
        held_until, group_order)
     VALUES (?, ?, ?, ?, ?, ?, ?, '[]', 0, ?, ?, ?)
     ON DUPLICATE KEY UPDATE ${sets.join(', ')}`,
    values,
  );
  const [row] = await selectRows(c, `SELECT ${SETTINGS_SELECT} FROM ${t.queueSettings} WHERE name = ?`, [name]);
  const settings = toSettings(row as RowDataPacket);
  const groupsChanged = change.groupOrder !== undefined || change.groupConcurrency !== undefined;
  if (groupsChanged && breaksStrictOrder(settings, {})) throw new StrictOrderBroken();
  return settings;
}
