/**
 * `pnpm --filter @workq/bench idle-cost [--store=mysql]`: what an idle worker
 * costs. A queue server on a database of its own and one SDK worker
 * (concurrency 10) with nothing to do; counts the worker's HTTP requests and
 * the database's work over 30 s. PostgreSQL (default): the database's
 * transactions. MySQL/MariaDB: the server's statements (`Questions`), which
 * are server-wide, so run it on an otherwise idle server; then, for 10 s, the
 * statements of a store's wake-up subscription alone.
 */
import { createMysqlStore } from '@workq/core/mysql';
import { startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { SERVICES } from './config.ts';

const IDLE_MS = 30_000;
const SUBSCRIPTION_MS = 10_000;
const database = `workq_idle_${process.pid}`;
const onMysql = process.argv.includes('--store=mysql');

/** One database of the bench's own on the chosen server, and a counter of the work done there. */
interface Target {
  url: string;
  unit: string;
  /** A running count of the work; reading it may count itself, which `count` leaves out. */
  count(): Promise<number>;
  drop(): Promise<void>;
}

async function postgresTarget(): Promise<Target> {
  const adminUrl = SERVICES.postgresUrl.replace(/\/[^/]*$/, '/postgres');
  const admin = new pg.Client(adminUrl);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  return {
    url: adminUrl.replace(/\/postgres$/, `/${database}`),
    unit: 'store transactions/s',
    count: async () => {
      await new Promise((resolve) => setTimeout(resolve, 600)); // statistics are flushed every 500 ms
      const sql = 'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1';
      return Number((await admin.query(sql, [database])).rows[0].n);
    },
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    },
  };
}

async function mysqlTarget(): Promise<Target> {
  const admin = await mysql.createConnection(SERVICES.mysqlUrl);
  await admin.query(`CREATE DATABASE \`${database}\``);
  let reads = 0;
  return {
    url: `${SERVICES.mysqlUrl}/${database}`,
    unit: 'statements/s (server-wide)',
    count: async () => {
      const [rows] = await admin.query<mysql.RowDataPacket[]>(`SHOW GLOBAL STATUS LIKE 'Questions'`);
      reads++;
      return Number(rows[0]?.Value) - reads;
    },
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await admin.end();
    },
  };
}

/** The rate of `target`'s count while `idle` runs for `ms`. */
async function rate(target: Target, ms: number): Promise<{ perSecond: number; seconds: number }> {
  const [before, started] = [await target.count(), Date.now()];
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = await target.count();
  const seconds = (Date.now() - started) / 1000;
  return { perSecond: (after - before) / seconds, seconds };
}

const target = onMysql ? await mysqlTarget() : await postgresTarget();
const quiet = { info: () => undefined, warn: () => undefined, error: console.error };
try {
  const server = await startServer({ store: target.url, port: 0, logger: quiet });
  let requests = 0;
  const counting: typeof fetch = (input, init) => {
    requests++;
    return fetch(input, init);
  };
  const worker = createClient({ url: server.url, jobs, fetch: counting }).consume(
    'sendEmail',
    async () => ({ messageId: '' }),
    { concurrency: 10 },
  );
  try {
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const requestsBefore = requests;
    const idle = await rate(target, IDLE_MS);
    console.log(
      `idle worker (concurrency 10), ${idle.seconds.toFixed(0)} s: ${idle.perSecond.toFixed(2)} ${target.unit}, ` +
        `${((requests - requestsBefore) / idle.seconds).toFixed(3)} HTTP requests/s from the worker`,
    );
  } finally {
    await worker.close();
    await server.close();
  }
  if (onMysql) {
    const store = await createMysqlStore({ url: target.url });
    try {
      await store.notifier?.subscribe(() => undefined);
      const polling = await rate(target, SUBSCRIPTION_MS);
      console.log(
        `one wake-up subscription alone (default wakeupPollMs): ${polling.perSecond.toFixed(2)} ${target.unit}`,
      );
    } finally {
      await store.close();
    }
  }
} finally {
  await target.drop();
}
