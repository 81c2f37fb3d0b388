import mysql, { type Pool } from 'mysql2/promise';
import type { Store } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { classifyMysqlError, describeTarget } from './errors.ts';
import { migrate } from './migrations.ts';
import { MysqlStore } from './mysql-store.ts';
import { PolledNotifier } from './notifier.ts';
import { tableNames } from './tables.ts';

/** How to reach MySQL or MariaDB (10.6+, or MySQL 8). */
export interface MysqlStoreOptions {
  /**
   * `mysql://user:password@host:port/database`; the database must exist.
   * Required unless `pool` is given.
   */
  url?: string | undefined;
  /**
   * A `mysql2/promise` pool to use instead of one made from `url`. The caller
   * keeps it: `close()` does not end it. It must keep mysql2's default
   * `FOUND_ROWS` flag (fenced updates count matched rows). Its sessions keep
   * their isolation level; claims still run under READ COMMITTED. The store
   * sets its own SQL mode, character set and time zone on each of the pool's
   * connections before its first statement there (see `SESSION_SETTINGS_SQL`),
   * and relies on them staying set.
   * @defaultValue a pool made from `url`
   */
  pool?: Pool | undefined;
  /**
   * Prefix of the store's table names: lower-case letters, digits and underscores, at most 31 characters.
   * @defaultValue 'workq_'
   */
  tablePrefix?: string | undefined;
  /** Connections in the pool made from `url`; ignored with `pool`. @defaultValue 10 */
  poolSize?: number | undefined;
  /** How long opening a connection may take before the store reports the server unreachable. @defaultValue 5_000 */
  connectTimeoutMs?: number | undefined;
  /**
   * How often each wake-up subscriber (one per queue server) reads the
   * wakeups table for messages other processes published: the bound on how
   * late a consumer waiting on one server hears of a job enqueued through
   * another. Its cost is one indexed `SELECT` per interval per subscriber
   * (10 a second at the default), one `INSERT` per published message, and a
   * small `DELETE` of messages older than a minute at most every 10 s.
   * `0` turns cross-process wake-ups off: the store has no `notifier`
   * and consumers on other processes notice jobs by polling alone.
   * @defaultValue 100
   */
  wakeupPollMs?: number | undefined;
}

const DEFAULTS = {
  tablePrefix: 'workq_',
  poolSize: 10,
  connectTimeoutMs: 5_000,
  wakeupPollMs: 100,
} as const;

/**
 * Opens the MySQL/MariaDB store and brings its tables to this version's
 * schema before it resolves (migrations.ts). Fails with `VALIDATION` on bad
 * options, `UNAVAILABLE` when the server cannot be reached, and
 * `UNSUPPORTED_VERSION` when the tables need a newer server or were made by an
 * older pre-release build.
 */
export async function createMysqlStore(options: MysqlStoreOptions): Promise<Store> {
  const tables = tableNames(options.tablePrefix ?? DEFAULTS.tablePrefix);
  const target = describeTarget(options.url);
  const wakeupPollMs = options.wakeupPollMs ?? DEFAULTS.wakeupPollMs;
  if (!Number.isFinite(wakeupPollMs) || wakeupPollMs < 0) {
    throw new WorkqError('VALIDATION', `wakeupPollMs must be a number >= 0; got ${String(wakeupPollMs)}.`);
  }
  const pool = options.pool ?? createPool(options, target);
  try {
    await migrate(pool, tables);
  } catch (error) {
    if (!options.pool) await pool.end().catch(() => undefined);
    throw classifyMysqlError(error, target, 'migrations');
  }
  const ownsPool = options.pool === undefined;
  const notifier = wakeupPollMs > 0 ? new PolledNotifier({ pool, tables, target, pollMs: wakeupPollMs }) : undefined;
  return new MysqlStore({ pool, tables, target, ownsPool, readCommittedSessions: ownsPool, notifier });
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
      // Dates are written and read as UTC text (see records.ts); this keeps any other date handling UTC too.
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
