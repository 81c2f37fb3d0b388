import type { Pool, PoolConnection, QueryValues, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { datesAsText } from './rows.ts';

/** A pool or one of its connections: anything a statement can run on. */
export type Queryable = Pool | PoolConnection;

/** Our values are JSON text, numbers, strings, dates as text, null and arrays of ids: all escapable. */
function toQueryValues(values: readonly unknown[]): QueryValues[] {
  return values as QueryValues[];
}

/** Runs a statement that returns rows. Values are always `?` parameters, escaped by the driver. */
export async function selectRows(
  db: Queryable,
  sql: string,
  values: readonly unknown[] = [],
): Promise<RowDataPacket[]> {
  const [rows] = await db.query<RowDataPacket[]>({ sql, values: toQueryValues(values), typeCast: datesAsText });
  return rows;
}

/**
 * Runs a statement that changes rows. `affectedRows` counts matched rows:
 * the driver connects with the `FOUND_ROWS` flag by default.
 */
export async function execute(db: Queryable, sql: string, values: readonly unknown[] = []): Promise<ResultSetHeader> {
  const [header] = await db.query<ResultSetHeader>({ sql, values: toQueryValues(values) });
  return header;
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
  const connection = await pool.getConnection();
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
