import pg from 'pg';
import { createPostgresStore } from '../src/stores/postgres/index.ts';
import { describeStore, type StoreHarness } from './conformance/describe-store.ts';

const url = process.env.WORKQ_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Each test file gets its own schema, dropped when the suite ends. Each
 * `open()` has its own small pool, as a separate process would; idle
 * connections close quickly, because the suite opens some forty stores and
 * the server allows a hundred connections in all.
 */
async function makePostgresHarness(): Promise<StoreHarness> {
  const schema = `workq_t_${Math.random().toString(36).slice(2, 10)}`;
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
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await admin.end();
        await Promise.all(pools.splice(0).map((pool) => pool.end()));
      }
    },
  };
}

async function unreachableReason(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    return undefined;
  } catch (error) {
    const where = url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
    return `PostgreSQL not reachable at ${where} (${(error as Error).message})`;
  } finally {
    await client.end().catch(() => {});
  }
}

const skipReason = await unreachableReason();
describeStore('postgres', makePostgresHarness, skipReason === undefined ? {} : { skipReason });
