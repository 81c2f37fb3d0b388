import type { PGlite, Transaction } from '@electric-sql/pglite';
import type { Pool, PoolClient } from 'pg';
import { toWorkqError } from './errors.ts';

/** Something that runs one parameterized statement and resolves to its rows. */
export interface SqlQueryable {
  query<Row>(text: string, params?: readonly unknown[]): Promise<Row[]>;
}

/**
 * The narrow seam between the PostgreSQL store and its driver (node-postgres
 * or PGlite). Driver errors leave it already classified as `WorkqError`s.
 */
export interface SqlClient extends SqlQueryable {
  /** Runs `fn` in one transaction on one connection: committed if it resolves, rolled back if it throws. */
  transaction<T>(fn: (tx: SqlQueryable) => Promise<T>): Promise<T>;
  /** Releases what this client owns. */
  close(): Promise<void>;
}

/** A `SqlClient` over a node-postgres pool; `ownsPool` decides whether `close()` ends it. */
export function createPoolSqlClient(pool: Pool, target: string, ownsPool: boolean): SqlClient {
  const run = async <Row>(on: Pool | PoolClient, text: string, params: readonly unknown[]): Promise<Row[]> => {
    try {
      const result = await on.query(text, [...params]);
      return result.rows as Row[];
    } catch (error) {
      throw toWorkqError(error, target);
    }
  };
  return {
    query: (text, params = []) => run(pool, text, params),
    async transaction(fn) {
      let connection: PoolClient;
      try {
        connection = await pool.connect();
      } catch (error) {
        throw toWorkqError(error, target);
      }
      let broken: Error | undefined;
      try {
        await run(connection, 'BEGIN', []);
        const value = await fn({ query: (text, params = []) => run(connection, text, params) });
        await run(connection, 'COMMIT', []);
        return value;
      } catch (error) {
        await connection.query('ROLLBACK').catch((rollbackError: Error) => {
          broken = rollbackError;
        });
        throw error;
      } finally {
        connection.release(broken);
      }
    },
    async close() {
      if (ownsPool) await pool.end();
    },
  };
}

/** A `SqlClient` over one PGlite instance; `ownsDb` decides whether `close()` closes it. */
export function createPgliteSqlClient(db: PGlite, target: string, ownsDb: boolean): SqlClient {
  const run = async <Row>(on: PGlite | Transaction, text: string, params: readonly unknown[]): Promise<Row[]> => {
    try {
      const result = await on.query<Row>(text, [...params]);
      return result.rows;
    } catch (error) {
      throw toWorkqError(error, target);
    }
  };
  return {
    query: (text, params = []) => run(db, text, params),
    async transaction(fn) {
      try {
        return await db.transaction((tx) => fn({ query: (text, params = []) => run(tx, text, params) }));
      } catch (error) {
        throw toWorkqError(error, target);
      }
    },
    async close() {
      if (ownsDb && !db.closed) await db.close();
    },
  };
}
