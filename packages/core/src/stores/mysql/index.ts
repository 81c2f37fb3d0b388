import mysql, { type Pool } from 'mysql2/promise';
import type { Store } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { classifyMysqlError, describeTarget } from './errors.ts';
import { migrate } from './migrations.ts';
import { MysqlStore } from './mysql-store.ts';
import { tableNames } from './tables.ts';

/** How to reach MySQL or MariaDB (10.6+, or MySQL 8). */
export interface MysqlStoreOptions {
  /**
   * `mysql://user:password@host:port/database`; the database must exist.
   * Required unless `pool` is given.
   */
  url?: string;
  /**
   * A `mysql2/promise` pool to use instead of one made from `url`. The caller
   * keeps it: `close()` does not end it. It must keep mysql2's default
   * `FOUND_ROWS` flag (fenced updates count matched rows). Its sessions keep
   * their isolation level; claims still run under READ COMMITTED.
   * @defaultValue a pool made from `url`
   */
  pool?: Pool;
  /**
   * Prefix of the store's table names: lower-case letters, digits and underscores, at most 31 characters.
   * @defaultValue 'workq_'
   */
  tablePrefix?: string;
  /** Connections in the pool made from `url`; ignored with `pool`. @defaultValue 10 */
  poolSize?: number;
  /** How long opening a connection may take before the store reports the server unreachable. @defaultValue 5_000 */
  connectTimeoutMs?: number;
}

const DEFAULTS = {
  tablePrefix: 'workq_',
  poolSize: 10,
  connectTimeoutMs: 5_000,
} as const;

/**
 * Opens the MySQL/MariaDB store and applies any pending migrations before it
 * resolves. Fails with `VALIDATION` on bad options and `UNAVAILABLE` when the
 * server cannot be reached.
 */
export async function createMysqlStore(options: MysqlStoreOptions): Promise<Store> {
  const tables = tableNames(options.tablePrefix ?? DEFAULTS.tablePrefix);
  const target = describeTarget(options.url);
  const pool = options.pool ?? createPool(options, target);
  try {
    await migrate(pool, tables);
  } catch (error) {
    if (!options.pool) await pool.end().catch(() => undefined);
    throw classifyMysqlError(error, target, 'migrations');
  }
  const ownsPool = options.pool === undefined;
  return new MysqlStore({ pool, tables, target, ownsPool, readCommittedSessions: ownsPool });
}

function createPool(options: MysqlStoreOptions, target: string): Pool {
  if (options.url === undefined) {
    throw new WorkqError(
      'VALIDATION',
      'createMysqlStore needs a `url` (mysql://user:password@host:port/database) or a `pool`.',
    );
  }
  const poolSize = options.poolSize ?? DEFAULTS.poolSize;
  if (!Number.isInteger(poolSize) || poolSize < 1) {
    throw new WorkqError('VALIDATION', `poolSize must be an integer >= 1; got ${String(poolSize)}.`);
  }
  let pool: Pool;
  try {
    pool = mysql.createPool({
      uri: options.url,
      connectionLimit: poolSize,
      connectTimeout: options.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs,
      // Dates are written and read as UTC text (see rows.ts); this keeps any other date handling UTC too.
      timezone: 'Z',
      charset: 'utf8mb4',
    });
  } catch (error) {
    throw new WorkqError(
      'VALIDATION',
      `The MySQL store URL for ${target} is not valid; expected mysql://user:password@host:port/database.`,
      { cause: error },
    );
  }
  // READ COMMITTED takes no gap locks and releases rows a scan does not match, so lease
  // sweeps, claims and completions do not lock each other out. The statement is queued
  // on each new connection before any of the store's own.
  pool.pool.on('connection', (connection) => {
    connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', () => undefined);
  });
  return pool;
}
