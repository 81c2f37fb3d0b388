/** The registries beside the jobs table: job schemas by (name, version), and workers by id. */
import type { SchemaEntry, WorkerPresence, WorkerRoom } from '../../engine/store.ts';
import type { SqlQueryable } from './connection.ts';
import { toJsonText } from './records.ts';
import type { Statements } from './statements.ts';

interface SchemaRow {
  name: string;
  version: number;
  fingerprint: string;
  json_schema: unknown;
  registered_at: Date;
}

interface WorkerRow {
  id: string;
  host: string;
  name: string;
  min_version: number;
  max_version: number;
  seen_at: Date;
  pid: number | null;
  started_at: Date | null;
}

function toSchemaEntry(row: SchemaRow): SchemaEntry {
  return {
    name: row.name,
    version: row.version,
    fingerprint: row.fingerprint,
    jsonSchema: row.json_schema,
    registeredAt: row.registered_at,
  };
}

/** See `Store.registerSchema`. */
export async function registerSchema(db: SqlQueryable, sql: Statements, entry: SchemaEntry): Promise<SchemaEntry> {
  await db.query(sql.insertSchema, [
    entry.name,
    entry.version,
    entry.fingerprint,
    toJsonText(entry.jsonSchema),
    entry.registeredAt,
  ]);
  const [row] = await db.query<SchemaRow>(sql.getSchema, [entry.name, entry.version]);
  return row ? toSchemaEntry(row) : entry;
}

/** See `Store.listSchemas`. */
export async function listSchemas(db: SqlQueryable, sql: Statements, name?: string): Promise<SchemaEntry[]> {
  return (await db.query<SchemaRow>(sql.listSchemas, [name ?? null])).map(toSchemaEntry);
}

/** See `Store.removeSchema`. */
export async function removeSchema(db: SqlQueryable, sql: Statements, name: string, version: number): Promise<boolean> {
  return (await db.query(sql.deleteSchema, [name, version])).length > 0;
}

/** See `Store.recordWorker`: one statement. */
export async function recordWorker(
  db: SqlQueryable,
  sql: Statements,
  worker: WorkerPresence,
  room: WorkerRoom,
): Promise<boolean> {
  const rows = await db.query(sql.recordWorker, [
    worker.id,
    worker.host,
    worker.name,
    worker.minVersion,
    worker.maxVersion,
    worker.seenAt,
    worker.pid,
    worker.startedAt,
    room.maxWorkers,
    room.idleBefore,
  ]);
  return rows.length > 0;
}

/** See `Store.pruneWorkers`. */
export async function pruneWorkers(db: SqlQueryable, sql: Statements, seenBefore: Date): Promise<number> {
  const [row] = await db.query<{ n: number }>(sql.pruneWorkers, [seenBefore]);
  return row?.n ?? 0;
}

/** See `Store.touchWorkers`. */
export async function touchWorkers(
  db: SqlQueryable,
  sql: Statements,
  ids: readonly string[],
  seenAt: Date,
): Promise<void> {
  if (ids.length > 0) await db.query(sql.touchWorkers, [ids, seenAt]);
}

/** See `Store.listWorkers`. */
export async function listWorkers(db: SqlQueryable, sql: Statements, seenSince: Date): Promise<WorkerPresence[]> {
  const rows = await db.query<WorkerRow>(sql.listWorkers, [seenSince]);
  return rows.map((row) => ({
    id: row.id,
    host: row.host,
    name: row.name,
    minVersion: row.min_version,
    maxVersion: row.max_version,
    pid: row.pid,
    startedAt: row.started_at,
    seenAt: row.seen_at,
  }));
}
