import type { SchemaEntry, WorkerPresence, WorkerRoom } from '../../engine/store.ts';
import { execute, type Queryable, selectRows, upsertRow } from './connection.ts';
import { readDate, sqlDate, writeJson } from './records.ts';
import type { Tables } from './tables.ts';

const SCHEMA_SELECT = 'name, version, fingerprint, json_schema, registered_at';
const WORKER_SELECT = 'id, host, name, min_version, max_version, seen_at, pid, started_at';

function schemaRow(row: Record<string, unknown>): SchemaEntry {
  return {
    name: String(row.name),
    version: Number(row.version),
    fingerprint: String(row.fingerprint),
    jsonSchema: JSON.parse(String(row.json_schema)),
    registeredAt: readDate(row.registered_at),
  };
}

function workerRow(row: Record<string, unknown>): WorkerPresence {
  return {
    id: String(row.id),
    host: String(row.host),
    name: String(row.name),
    minVersion: Number(row.min_version),
    maxVersion: Number(row.max_version),
    pid: row.pid === null || row.pid === undefined ? null : Number(row.pid),
    startedAt: row.started_at === null || row.started_at === undefined ? null : readDate(row.started_at),
    seenAt: readDate(row.seen_at),
  };
}

/** Inserts the entry unless `(name, version)` is registered; resolves to the entry stored. */
export async function registerSchema(db: Queryable, t: Tables, entry: SchemaEntry): Promise<SchemaEntry> {
  await execute(
    db,
    `INSERT INTO ${t.schemas} (${SCHEMA_SELECT}) VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE name = name`,
    [entry.name, entry.version, entry.fingerprint, writeJson(entry.jsonSchema), sqlDate(entry.registeredAt)],
  );
  const [row] = await selectRows(db, `SELECT ${SCHEMA_SELECT} FROM ${t.schemas} WHERE name = ? AND version = ?`, [
    entry.name,
    entry.version,
  ]);
  return row ? schemaRow(row) : entry;
}

/** Registered schemas, optionally of one job name, ordered by name then version. */
export async function listSchemas(db: Queryable, t: Tables, name?: string): Promise<SchemaEntry[]> {
  const rows =
    name === undefined
      ? await selectRows(db, `SELECT ${SCHEMA_SELECT} FROM ${t.schemas} ORDER BY name, version`)
      : await selectRows(db, `SELECT ${SCHEMA_SELECT} FROM ${t.schemas} WHERE name = ? ORDER BY version`, [name]);
  return rows.map(schemaRow);
}

/** Deletes the schema of one (name, version); resolves to whether there was one. */
export async function removeSchema(db: Queryable, t: Tables, name: string, version: number): Promise<boolean> {
  const header = await execute(db, `DELETE FROM ${t.schemas} WHERE name = ? AND version = ?`, [name, version]);
  return header.affectedRows > 0;
}

/**
 * Records a consumer's presence (see `Store.recordWorker`): an update of a known id; else an insert, while
 * the table has room or once the row seen longest ago, and before `room.idleBefore`, is deleted for it.
 */
export async function recordWorker(
  db: Queryable,
  t: Tables,
  worker: WorkerPresence,
  room: WorkerRoom,
): Promise<boolean> {
  const seenAt = sqlDate(worker.seenAt);
  const startedAt = worker.startedAt === null ? null : sqlDate(worker.startedAt);
  // `affectedRows` counts matched rows (FOUND_ROWS), so a known worker seen at the same time still counts.
  const known = await execute(
    db,
    `UPDATE ${t.workers} SET host = ?, name = ?, min_version = ?, max_version = ?, seen_at = ?, pid = ?,
       started_at = ? WHERE id = ?`,
    [worker.host, worker.name, worker.minVersion, worker.maxVersion, seenAt, worker.pid, startedAt, worker.id],
  );
  if (known.affectedRows > 0) return true;
  const [held] = await selectRows(db, `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${t.workers} LIMIT ?) AS held`, [
    room.maxWorkers,
  ]);
  if (Number(held?.n) >= room.maxWorkers) {
    const evicted = await execute(db, `DELETE FROM ${t.workers} WHERE seen_at < ? ORDER BY seen_at LIMIT 1`, [
      sqlDate(room.idleBefore),
    ]);
    if (evicted.affectedRows === 0) return false;
  }
  await upsertWorker(db, t, worker);
  return true;
}

/** Deletes the consumers last seen before `seenBefore` (the `seen` index finds them). */
export async function pruneWorkers(db: Queryable, t: Tables, seenBefore: Date): Promise<number> {
  return (await execute(db, `DELETE FROM ${t.workers} WHERE seen_at < ?`, [sqlDate(seenBefore)])).affectedRows;
}

/** Upserts a consumer's presence by its id. */
async function upsertWorker(db: Queryable, t: Tables, worker: WorkerPresence): Promise<void> {
  await upsertRow(db, t.workers, {
    id: worker.id,
    host: worker.host,
    name: worker.name,
    min_version: worker.minVersion,
    max_version: worker.maxVersion,
    seen_at: sqlDate(worker.seenAt),
    pid: worker.pid,
    started_at: worker.startedAt === null ? null : sqlDate(worker.startedAt),
  });
}

/** Marks the consumers with these ids seen at `seenAt`, unless seen later already. */
export async function touchWorkers(db: Queryable, t: Tables, ids: readonly string[], seenAt: Date): Promise<void> {
  if (ids.length === 0) return;
  await execute(db, `UPDATE ${t.workers} SET seen_at = ? WHERE id IN (?) AND seen_at < ?`, [
    sqlDate(seenAt),
    ids,
    sqlDate(seenAt),
  ]);
}

/** Consumers seen at or after `seenSince`, ordered by id. */
export async function listWorkers(db: Queryable, t: Tables, seenSince: Date): Promise<WorkerPresence[]> {
  const rows = await selectRows(db, `SELECT ${WORKER_SELECT} FROM ${t.workers} WHERE seen_at >= ? ORDER BY id`, [
    sqlDate(seenSince),
  ]);
  return rows.map(workerRow);
}
