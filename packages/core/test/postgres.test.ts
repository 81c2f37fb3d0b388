import { freshPostgresSchema, postgresUnreachableReason, POSTGRES_URL as url } from '@workq/test-support';
import pg from 'pg';
import { createPostgresStore } from '../src/stores/postgres/index.ts';
import { describeStore, type StoreHarness } from './conformance/describe-store.ts';

/**
 * Each test file gets its own schema, dropped when the suite ends. Each
 * `open()` has its own small pool, as a separate process would; idle
 * connections close quickly, because the suite opens some forty stores and
 * the server allows a hundred connections in all.
 */
async function makePostgresHarness(): Promise<StoreHarness> {
  const { schema, drop } = freshPostgresSchema();
  const pools: pg.Pool[] = [];
  return {
    separateConnections: true,
    async open() {
      const pool = new pg.Pool({ connectionString: url, max: 3, idleTimeoutMillis: 500 });
      pool.on('error', () => {});
      pools.push(pool);
      return createPostgresStore({ pool, schema });
    },
    async close() {
      try {
        await drop();
      } finally {
        await Promise.all(pools.splice(0).map((pool) => pool.end()));
      }
    },
  };
}

const skipReason = await postgresUnreachableReason();
describeStore('postgres', makePostgresHarness, skipReason === undefined ? {} : { skipReason });
