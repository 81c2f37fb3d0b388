import type { PGlite } from '@electric-sql/pglite';
import type pg from 'pg';
import type { Store } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { createPgliteSqlClient, createPoolSqlClient, type SqlClient } from './connection.ts';
import { describeTarget, toWorkqError } from './errors.ts';
import { migrate, quoteSchema } from './migrations.ts';
import { createPgNotifier } from './notifier.ts';
import { pgliteTemplateFor } from './pglite-template.ts';
import { PostgresStore } from './postgres-store.ts';

/** Options of `createPostgresStore`. */
export interface PostgresStoreOptions {
  /**
   * A `postgres://` URL. Ignored when `pool` is given.
   * @defaultValue the `PG*` environment variables, as node-postgres reads them
   */
  connectionString?: string | undefined;
  /**
   * A pool to use instead of making one. It stays yours: `close()` does not end it.
   * @defaultValue a new pool, ended by `close()`
   */
  pool?: pg.Pool | undefined;
  /**
   * The schema holding workq's tables; created and migrated on start.
   * @defaultValue 'workq'
   */
  schema?: string | undefined;
  /**
   * Connections in the pool this store makes (each notifier subscriber holds one more).
   * @defaultValue 10
   */
  poolSize?: number | undefined;
  /**
   * Vacuums the jobs table after this many claimed, completed, cancelled or
   * pruned rows, so claims stay fast between autovacuum runs (each claim leaves
   * a dead entry in the claim index); 0 leaves it all to autovacuum. A table of
   * T rows waits for sqrt(2000 · T) rows when that is more (past 50,000 rows
   * with the default), since each vacuum reads every index whole. Skipped by
   * the server when the store's user does not own the table.
   * @defaultValue 10_000
   */
  vacuumEveryRows?: number | undefined;
}

/** Options of `createPgliteStore`. */
export interface PgliteStoreOptions {
  /**
   * Where PGlite keeps its files.
   * @defaultValue undefined: in memory, gone on `close()`
   */
  dataDir?: string | undefined;
  /**
   * The schema holding workq's tables.
   * @defaultValue 'workq'
   */
  schema?: string | undefined;
}

const DEFAULT_SCHEMA = 'workq';
const DEFAULT_POOL_SIZE = 10;
/**
 * Connections this store's own pool opens at start and keeps open when idle:
 * an enqueue, a claim, its acks and a presence write can all be in flight at once.
 */
const WARM_CONNECTIONS = 4;
/** How long to wait for a connection before failing with `UNAVAILABLE`. */
const CONNECTION_TIMEOUT_MS = 10_000;
const DEFAULT_VACUUM_EVERY_ROWS = 10_000;
/** PGlite has no autovacuum at all: every dead claim-index entry stays until the store vacuums. */
const PGLITE_VACUUM_EVERY_ROWS = 5_000;

/** Loads an optional peer dependency, or says which package to install. */
async function loadDriver<T>(load: () => Promise<T>, packageName: string, store: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw new WorkqError('UNAVAILABLE', `The ${store} store needs the "${packageName}" package: install it.`, {
      retryable: false,
      cause: error,
    });
  }
}

async function migrateThen(client: SqlClient, schema: string, build: () => PostgresStore): Promise<PostgresStore> {
  try {
    await migrate(client, schema);
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
  return build();
}

/**
 * A store on a PostgreSQL server, over node-postgres. Migrates the schema
 * before it resolves; fails with `UNAVAILABLE` when the server cannot be
 * reached. Wake-ups go over LISTEN/NOTIFY (`Store.notifier`).
 */
export async function createPostgresStore(options: PostgresStoreOptions = {}): Promise<Store> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  quoteSchema(schema);
  const driver = (await loadDriver(() => import('pg'), 'pg', 'PostgreSQL')).default;
  const clientConfig: pg.ClientConfig = options.pool
    ? { ...options.pool.options }
    : { connectionString: options.connectionString, connectionTimeoutMillis: CONNECTION_TIMEOUT_MS };
  const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
  const warmConnections = options.pool ? 0 : Math.min(poolSize, WARM_CONNECTIONS);
  const pool =
    options.pool ?? new driver.Pool({ ...clientConfig, max: poolSize, min: warmConnections, allowExitOnIdle: true });
  // An idle connection that drops emits on the pool; the next query reports it as UNAVAILABLE.
  if (!options.pool) pool.on('error', () => {});
  const target = describeTarget(
    options.pool ? { host: options.pool.options.host, port: options.pool.options.port } : clientConfig,
  );
  const client = createPoolSqlClient(pool, target, options.pool === undefined);
  const store = await migrateThen(client, schema, () => {
    const notifier = createPgNotifier({ driver, clientConfig, client, schema, target });
    const vacuumEveryRows = options.vacuumEveryRows ?? DEFAULT_VACUUM_EVERY_ROWS;
    return new PostgresStore({ kind: 'postgres', client, schema, notifier, vacuumEveryRows });
  });
  // The first jobs after a start then wait for no connects, parses or catalog loads.
  if (warmConnections > 0)
    await client
      .warm(warmConnections, () => store.warmUpStatements())
      .catch(async (error) => {
        await store.close();
        throw error;
      });
  return store;
}

/**
 * A store on embedded PostgreSQL (PGlite), in memory or in `dataDir`.
 * Migrates before it resolves. One process only: no cross-process wake-ups
 * (it has no `notifier`).
 */
export async function createPgliteStore(options: PgliteStoreOptions = {}): Promise<Store> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  quoteSchema(schema);
  const { PGlite } = await loadDriver(() => import('@electric-sql/pglite'), '@electric-sql/pglite', 'PGlite');
  let db: PGlite;
  try {
    const template = await pgliteTemplateFor(options.dataDir);
    db = await PGlite.create(options.dataDir === undefined ? template : { dataDir: options.dataDir, ...template });
  } catch (error) {
    throw toWorkqError(error, `PGlite in ${options.dataDir ?? 'memory'}`);
  }
  return openPgliteStore(db, { schema, ownsDb: true });
}

/**
 * A store on a PGlite instance the caller opened; several stores may share
 * one. Internal: not exported from the subpath entry.
 */
export async function openPgliteStore(db: PGlite, options: { schema?: string; ownsDb: boolean }): Promise<Store> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const client = createPgliteSqlClient(db, 'PGlite', options.ownsDb);
  return migrateThen(
    client,
    schema,
    () => new PostgresStore({ kind: 'pglite', client, schema, vacuumEveryRows: PGLITE_VACUUM_EVERY_ROWS }),
  );
}
