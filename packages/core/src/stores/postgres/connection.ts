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

/** A `SqlClient` over a pool of connections, which it can open ahead of need. */
export interface PoolSqlClient extends SqlClient {
  /**
   * Opens up to `connections` connections at once and runs the statements
   * `statementsFor()` gives on each, so later calls skip the connect, the
   * parse and the loading of the table's catalog entries. They run in a
   * transaction that is rolled back: whatever they write is not kept.
   */
  warm(connections: number, statementsFor: () => readonly SqlStatement[]): Promise<void>;
}

export interface SqlStatement {
  text: string;
  params: readonly unknown[];
}

/** A `SqlClient` over a node-postgres pool; `ownsPool` decides whether `close()` ends it. */
export function createPoolSqlClient(pool: Pool, target: string, ownsPool: boolean): PoolSqlClient {
  const names = new Map<string, string>();
  /**
   * Parameterized statements run as named prepared statements: each connection parses and plans a statement
   * once, and later runs send only its name and values. The store's statement texts are a small fixed set.
   */
  const nameOf = (text: string): string => {
    let name = names.get(text);
    if (name === undefined) {
      name = `workq_${fnv1a(text)}_${text.length}`;
      names.set(text, name);
    }
    return name;
  };
  const run = async <Row>(on: Pool | PoolClient, text: string, params: readonly unknown[]): Promise<Row[]> => {
    try {
      const result =
        params.length === 0 ? await on.query(text) : await on.query({ name: nameOf(text), text, values: [...params] });
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
    async warm(connections, statementsFor) {
      const opened = await Promise.allSettled(Array.from({ length: connections }, () => pool.connect()));
      const held = opened.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      // A connection whose rollback failed is closed rather than returned to the pool mid-transaction.
      const broken = new Set<PoolClient>();
      try {
        await Promise.all(
          held.map(async (connection) => {
            await run(connection, 'BEGIN', []);
            try {
              for (const { text, params } of statementsFor()) await run(connection, text, params);
            } finally {
              await run(connection, 'ROLLBACK', []).catch(() => broken.add(connection));
            }
          }),
        );
      } finally {
        for (const connection of held) connection.release(broken.has(connection));
      }
      const failed = opened.find((result) => result.status === 'rejected');
      if (failed) throw toWorkqError(failed.reason, target);
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

/** A 32-bit FNV-1a hash, in hex: short, stable statement names. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16);
}
