import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { WorkqError } from '../../errors.ts';
import { type Ledger, type Migration, refuseNewerSchema } from '../shared/migration.ts';
import { BASELINE_VERSION, baseline } from './baseline.ts';
import { hasColumn, hasTable } from './catalog.ts';
import { pinnedConnection } from './connection.ts';
import { preReleaseRefused } from './pre-release-schema.ts';
import type { Tables } from './tables.ts';

/**
 * The migrations of databases made by released versions, in order, each from the version before it to its
 * own. None yet: nothing has been released, and the baseline builds the current schema.
 */
function migrations(_t: Tables): readonly Migration[] {
  return [];
}

/** The schema version this code reads and writes: the baseline's, which the last migration also reaches. */
export const SCHEMA_VERSION = BASELINE_VERSION;

const LOCK_TIMEOUT_S = 60;

/** A server-wide lock name for this database and table prefix (MySQL caps lock names at 64 characters). */
const LOCK_NAME = `LEFT(CONCAT('workq:', COALESCE(DATABASE(), ''), ':', ?), 64)`;

/**
 * Brings the store's tables to `SCHEMA_VERSION`, under a named lock so concurrent starts do it once: an empty
 * database gets the baseline; tables of an older released version the migrations after it; tables of a schema
 * before the baseline (pre-release builds) are refused (pre-release-schema.ts). Refuses with `UNSUPPORTED_VERSION` to run on tables whose
 * ledger asks for a server newer than this one (migrated by a newer server that older ones cannot run beside);
 * a newer schema that allows this server is left as it is. Running it again changes nothing.
 */
export async function migrate(pool: Pool, t: Tables): Promise<void> {
  const connection = await pinnedConnection(pool);
  try {
    const [locked] = await connection.query<RowDataPacket[]>(`SELECT GET_LOCK(${LOCK_NAME}, ?) AS locked`, [
      t.migrations,
      LOCK_TIMEOUT_S,
    ]);
    if (Number(locked[0]?.locked) !== 1) {
      throw new WorkqError(
        'UNAVAILABLE',
        `Waited ${LOCK_TIMEOUT_S} s for another process to finish migrating the workq tables; retry, or look for a stuck migration.`,
      );
    }
    try {
      await migrateLocked(connection, t);
    } finally {
      // If this fails the connection is gone, and the server has released the lock with it.
      await connection.query(`SELECT RELEASE_LOCK(${LOCK_NAME})`, [t.migrations]).catch(() => undefined);
    }
  } finally {
    connection.release();
  }
}

async function migrateLocked(c: PoolConnection, t: Tables): Promise<void> {
  // The ledger: a row per schema version applied, with the oldest server that may run once it is.
  await c.query(
    `CREATE TABLE IF NOT EXISTS ${t.migrations} (
      version INT NOT NULL PRIMARY KEY,
      name VARCHAR(200) NOT NULL,
      min_server_version INT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
  );
  const state = await readLedger(c, t);
  // Nothing is released, so every schema before the baseline is a pre-release build's.
  if (state.version > 0 && state.version < BASELINE_VERSION) throw preReleaseRefused(t, state.version);
  refuseNewerSchema(
    state,
    SCHEMA_VERSION,
    `The workq schema of this database and table prefix (ledger ${t.migrationsName})`,
  );
  if (state.version === 0) {
    // Jobs without the baseline's last columns: a pre-release build stopped before it recorded its first step.
    if ((await hasTable(c, t.jobsName)) && !(await hasColumns(c, t.jobsName, ['errors', 'pending_children']))) {
      throw preReleaseRefused(t, 0);
    }
  }
  const pending = state.version === 0 ? [baseline(t)] : migrations(t).filter((m) => m.version > state.version);
  for (const migration of pending) {
    for (const statement of migration.statements) await c.query(statement);
    await c.query(`INSERT INTO ${t.migrations} (version, name, min_server_version) VALUES (?, ?, ?)`, [
      migration.version,
      migration.name,
      migration.minServerVersion,
    ]);
  }
}

async function hasColumns(c: PoolConnection, table: string, columns: readonly string[]): Promise<boolean> {
  for (const column of columns) if (!(await hasColumn(c, table, column))) return false;
  return true;
}

/** The ledger's latest version and highest `min_server_version`; a pre-release ledger may lack that column. */
async function readLedger(c: PoolConnection, t: Tables): Promise<Ledger> {
  const minServer = (await hasColumn(c, t.migrationsName, 'min_server_version')) ? 'MAX(min_server_version)' : 'NULL';
  const [rows] = await c.query<RowDataPacket[]>(
    `SELECT COALESCE(MAX(version), 0) AS version, ${minServer} AS min_server_version FROM ${t.migrations}`,
  );
  const row = rows[0];
  return {
    version: Number(row?.version ?? 0),
    minServerVersion: row?.min_server_version == null ? null : Number(row.min_server_version),
  };
}
