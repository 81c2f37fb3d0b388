import mysql from 'mysql2/promise';
import { createMysqlStore } from '../src/stores/mysql/index.ts';
import { describeStore, type StoreHarness } from './conformance/describe-store.ts';

const url = process.env.WORKQ_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

/** The server URL with `database` in place of the test database. */
function withDatabase(database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Each run gets its own database, dropped when the suite ends; each `open()` has its own pool. */
async function makeMysqlHarness(): Promise<StoreHarness> {
  const database = `workq_t_${Math.random().toString(36).slice(2, 10)}`;
  const admin = await mysql.createConnection(url);
  try {
    await admin.query(`CREATE DATABASE \`${database}\``);
  } finally {
    await admin.end();
  }
  return {
    separateConnections: true,
    open: () => createMysqlStore({ url: withDatabase(database), poolSize: 4 }),
    async close() {
      const connection = await mysql.createConnection(url);
      try {
        await connection.query(`DROP DATABASE IF EXISTS \`${database}\``);
      } finally {
        await connection.end();
      }
    },
  };
}

async function unreachableReason(): Promise<string | undefined> {
  try {
    const connection = await mysql.createConnection({ uri: url, connectTimeout: 5_000 });
    await connection.end();
    return undefined;
  } catch (error) {
    return `MySQL/MariaDB not reachable at ${url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@')}: ${(error as Error).message}`;
  }
}

const skipReason = await unreachableReason();
describeStore('mysql', makeMysqlHarness, skipReason === undefined ? {} : { skipReason });
