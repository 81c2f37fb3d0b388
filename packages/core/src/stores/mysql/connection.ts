import type { Pool, PoolConnection, QueryValues, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { datesAsText } from './records.ts';

/** A pool or one of its connections: anything a statement can run on. */
export type Queryable = Pool | PoolConnection;

/**
 * The session the store's SQL is written for, set on every connection before
 * its first statement (`pinnedConnection`), whatever the server's global
 * settings, its `init_connect`, or a caller's pool chose:
 *
 * - `sql_mode` without `NO_BACKSLASH_ESCAPES`: values are escaped by the
 *   driver on the client, quotes as `\'`; under that mode a backslash is an
 *   ordinary character, and a value such as `' OR 1=1 -- ` would end its
 *   string literal and rewrite the statement. Without `ANSI_QUOTES` and
 *   `PIPES_AS_CONCAT` too (strings are single-quoted, identifiers
 *   backquoted), and with `STRICT_TRANS_TABLES`, so a value that does not fit
 *   a column fails instead of being cut. The modes named are valid on MariaDB
 *   10.6+ and MySQL 8 alike.
 * - `NAMES utf8mb4`: the driver escapes UTF-8 text; under a multi-byte client
 *   character set such as GBK or SJIS an escaping backslash can be read as
 *   part of a character.
 * - `time_zone` UTC: dates are written and read as UTC text (see records.ts);
 *   this keeps any server-side date arithmetic UTC too.
 */
export const SESSION_SETTINGS_SQL = `SET NAMES utf8mb4, SESSION sql_mode = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', SESSION time_zone = '+00:00'`;

/** The driver's connections (stable across checkouts, unlike their promise wrappers) whose session is pinned. */
const pinnedSessions = new WeakSet<object>();

/**
 * A connection of `pool` whose session runs `SESSION_SETTINGS_SQL`: set and
 * awaited on its first checkout, before the caller's first statement, so no
 * statement can run on it unpinned. A connection whose settings fail is
 * destroyed, never handed out. mysql2's pool has no per-connection init
 * statement, and its `connection` event cannot report a failure, so
 * checkout is where this happens; it costs one round trip per new connection.
 * A caller's pool is pinned the same way; a caller that changes a session's
 * settings afterwards takes the store's guarantee with it.
 */
export async function pinnedConnection(pool: Pool): Promise<PoolConnection> {
  const connection = await pool.getConnection();
  if (pinnedSessions.has(connection.connection)) return connection;
  try {
    await connection.query(SESSION_SETTINGS_SQL);
  } catch (error) {
    connection.destroy();
    throw error;
  }
  pinnedSessions.add(connection.connection);
  return connection;
}

/**
 * Runs `work` on `db` itself when it is a connection, else on a pinned connection of the pool, released after:
 * statements that follow one another (outside a transaction) take one checkout rather than one each.
 */
export async function onPinned<T>(db: Queryable, work: (connection: PoolConnection) => Promise<T>): Promise<T> {
  if (!('getConnection' in db)) return work(db);
  const connection = await pinnedConnection(db);
  try {
    return await work(connection);
  } finally {
    connection.release();
  }
}

/** Our values are JSON text, numbers, strings, dates as text, null and arrays of ids: all escapable. */
function toQueryValues(values: readonly unknown[]): QueryValues[] {
  return values as QueryValues[];
}

/**
 * Runs a statement that returns rows. Values are always `?` parameters, escaped by the driver, on a
 * pinned session (`pinnedConnection`).
 */
export async function selectRows(
  db: Queryable,
  sql: string,
  values: readonly unknown[] = [],
): Promise<RowDataPacket[]> {
  const [rows] = await onPinned(db, (connection) =>
    connection.query<RowDataPacket[]>({ sql, values: toQueryValues(values), typeCast: datesAsText }),
  );
  return rows;
}

/**
 * Runs a statement that changes rows. `affectedRows` counts matched rows:
 * the driver connects with the `FOUND_ROWS` flag by default.
 */
export async function execute(db: Queryable, sql: string, values: readonly unknown[] = []): Promise<ResultSetHeader> {
  const [header] = await onPinned(db, (connection) =>
    connection.query<ResultSetHeader>({ sql, values: toQueryValues(values) }),
  );
  return header;
}

/**
 * Inserts `row` (column names, spliced into the statement, to values) into `table`, or, where a row with its
 * key exists, sets every column but the first (the key) to the value in `row`. VALUES(col) works on MariaDB
 * and MySQL alike (MySQL 8 deprecates it in favour of an alias MariaDB lacks).
 */
export async function upsertRow(db: Queryable, table: string, row: Readonly<Record<string, unknown>>): Promise<void> {
  const columns = Object.keys(row);
  const updates = columns.slice(1).map((column) => `${column} = VALUES(${column})`);
  await execute(
    db,
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
     ON DUPLICATE KEY UPDATE ${updates.join(', ')}`,
    Object.values(row),
  );
}

/**
 * Runs `work` in one transaction on one connection: committed when it
 * resolves, rolled back when it throws. `readCommitted` takes no gap locks and
 * keeps locks only on rows that match, which claims rely on.
 */
export async function inTransaction<T>(
  pool: Pool,
  work: (connection: PoolConnection) => Promise<T>,
  options: { readCommitted?: boolean } = {},
): Promise<T> {
  const connection = await pinnedConnection(pool);
  try {
    if (options.readCommitted) await connection.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
    await connection.beginTransaction();
    try {
      const result = await work(connection);
      await connection.commit();
      return result;
    } catch (error) {
      // A failed rollback means the connection is gone, and the server rolls back with it.
      await connection.rollback().catch(() => undefined);
      throw error;
    }
  } finally {
    connection.release();
  }
}
