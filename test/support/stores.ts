import { type JobRecord, redactUrl, type Store } from '@workq/core/engine';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { describe } from 'vitest';
import { mongoStoreOnDouble } from '../../packages/core/test/support/mongodb-on-double.ts';

/** The local PostgreSQL server the end-to-end tests use; `WORKQ_TEST_POSTGRES_URL` overrides. */
export const POSTGRES_URL = process.env.WORKQ_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The local MySQL/MariaDB server the end-to-end tests use; `WORKQ_TEST_MYSQL_URL` overrides (`mariadb://` too). */
export const MYSQL_URL = process.env.WORKQ_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

/** A store one test file has to itself: the URL a queue server opens, and how to remove it afterwards. */
export interface FreshStore {
  url: string;
  /** An opened store to give a queue server in this process instead of `url`, for a store no URL reaches. */
  store?: Store;
  drop: () => Promise<void>;
}

/** A kind of store the end-to-end tests run on, one row of `describeEachStore`. */
export interface E2EStoreKind {
  label: string;
  /** Makes a fresh, empty store of this kind, ready for a server to open. */
  open: () => Promise<FreshStore>;
  /** Why this kind cannot be reached here; resolves to `undefined` when it can. Absent: assumed reachable. */
  unreachableReason?: () => Promise<string | undefined>;
}

/** A store URL for one test file: a fresh PostgreSQL schema, dropped by `drop()`. */
export function freshPostgresStore(): FreshStore & { schema: string } {
  const schema = `workq_e2e_${randomSuffix()}`;
  const separator = POSTGRES_URL.includes('?') ? '&' : '?';
  return {
    url: `${POSTGRES_URL}${separator}schema=${schema}`,
    schema,
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A store URL for one test file: a fresh MySQL/MariaDB database, created before this resolves
 * (the store needs it to exist) and dropped by `drop()`.
 */
export async function freshMysqlStore(): Promise<FreshStore & { database: string }> {
  const database = `workq_e2e_${randomSuffix()}`;
  await onMysqlServer((connection) => connection.query(`CREATE DATABASE \`${database}\``));
  const url = new URL(MYSQL_URL);
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    database,
    drop: async () => {
      await onMysqlServer((connection) => connection.query(`DROP DATABASE IF EXISTS \`${database}\``));
    },
  };
}

let mysqlReachability: Promise<string | undefined> | undefined;

/** Why the MySQL/MariaDB server cannot be reached, or `undefined` when it can. Checked once per test file. */
export function mysqlUnreachableReason(): Promise<string | undefined> {
  mysqlReachability ??= onMysqlServer(() => Promise.resolve()).then(
    () => undefined,
    (error: unknown) => `MySQL/MariaDB not reachable at ${redactUrl(MYSQL_URL)}: ${(error as Error).message}`,
  );
  return mysqlReachability;
}

const postgres: E2EStoreKind = { label: 'postgres', open: async () => freshPostgresStore() };
const pglite: E2EStoreKind = { label: 'pglite', open: async () => ({ url: 'pglite://memory', drop: async () => {} }) };
const mariadb: E2EStoreKind = { label: 'mysql', open: freshMysqlStore, unreachableReason: mysqlUnreachableReason };

/** The stores every end-to-end flow runs on. */
export const E2E_STORES: readonly E2EStoreKind[] = [postgres, pglite, mariadb];

/**
 * The MongoDB store on the driver double (no MongoDB server runs here; see
 * docs/stores/mongodb.md), given to the queue server as an opened store,
 * which the server closes; `drop` then clears the double.
 */
const mongodbDouble: E2EStoreKind = {
  label: 'mongodb (driver double)',
  open: async () => {
    const { double, store } = await mongoStoreOnDouble();
    return { url: 'mongodb://driver-double/', store, drop: async () => double.databases.clear() };
  },
};

/** A real MongoDB replica set, where `WORKQ_TEST_MONGODB_URI` names one (the hosted CI workflow starts one). */
export const MONGODB_URI = process.env.WORKQ_TEST_MONGODB_URI;

/** A fresh database on the real MongoDB server, dropped by `drop()`. */
async function freshMongoStore(): Promise<FreshStore> {
  const { MongoClient } = await import('mongodb');
  const url = new URL(MONGODB_URI as string);
  const database = `workq_e2e_${randomSuffix()}`;
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new MongoClient(MONGODB_URI as string, { serverSelectionTimeoutMS: 5_000 });
      try {
        await client.db(database).dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
}

let mongoReachability: Promise<string | undefined> | undefined;

/** Why no real MongoDB can be reached, or `undefined` when one can. Checked once per test file. */
function mongoUnreachableReason(): Promise<string | undefined> {
  if (MONGODB_URI === undefined) {
    return Promise.resolve('WORKQ_TEST_MONGODB_URI is unset; no MongoDB server runs on this machine');
  }
  mongoReachability ??= (async () => {
    const { MongoClient } = await import('mongodb');
    const client = new MongoClient(MONGODB_URI, { serverSelectionTimeoutMS: 5_000 });
    try {
      await client.db('admin').command({ ping: 1 });
      return undefined;
    } catch (error) {
      return `MongoDB not reachable at ${redactUrl(MONGODB_URI)}: ${(error as Error).message}`;
    } finally {
      await client.close();
    }
  })();
  return mongoReachability;
}

const mongodbReal: E2EStoreKind = {
  label: 'mongodb (real)',
  open: freshMongoStore,
  unreachableReason: mongoUnreachableReason,
};

/**
 * The stores a queue server in the test's own process runs on: every one of `E2E_STORES`, the MongoDB
 * driver double, and a real MongoDB where one is reachable.
 */
export const IN_PROCESS_STORES: readonly E2EStoreKind[] = [...E2E_STORES, mongodbDouble, mongodbReal];

/**
 * The stores on a database server of their own, shared by every process and outliving any queue server
 * (the driver double lives in one process, so it cannot be one of them).
 */
export const SERVER_STORES: readonly E2EStoreKind[] = [postgres, mariadb, mongodbReal];

/**
 * `describe.each` over store kinds: `title` may name `$label`. A kind that cannot be reached here
 * is registered as skipped, with the reason in its title and printed, never silently passed.
 */
export async function describeEachStore(
  kinds: readonly E2EStoreKind[],
  title: string,
  suite: (kind: E2EStoreKind) => void,
): Promise<void> {
  const rows = await Promise.all(
    kinds.map(async (kind) => ({ ...kind, skipReason: await kind.unreachableReason?.() })),
  );
  const reachable = rows.filter((row) => row.skipReason === undefined);
  const unreachable = rows.filter((row) => row.skipReason !== undefined);
  if (reachable.length > 0) describe.each(reachable)(title, suite);
  for (const row of unreachable) {
    const skipped = `${title.replace('$label', row.label)}: skipped — ${row.skipReason}`;
    console.log(skipped);
    describe.skip(skipped, () => suite(row));
  }
}

/** Every stored job of one type, read from the store itself rather than through a queue server, in id order. */
export async function listStoredJobs(store: Store, name: string): Promise<JobRecord[]> {
  const all: JobRecord[] = [];
  for (;;) {
    const afterId = all.at(-1)?.id;
    const page = await store.listJobs({ name, limit: 1000, ...(afterId === undefined ? {} : { afterId }) });
    all.push(...page);
    if (page.length < 1000) return all;
  }
}

async function onMysqlServer(work: (connection: mysql.Connection) => Promise<unknown>): Promise<void> {
  // The driver reads any scheme as MySQL's; the store accepts `mariadb://` too.
  const connection = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 5_000 });
  try {
    await work(connection);
  } finally {
    await connection.end();
  }
}

function randomSuffix(): string {
  return Math.random().toString(36).slice(2, 10);
}
