/**
 * `pnpm --filter @workq/bench idle-cost`: what an idle worker costs. A queue
 * server on its own PostgreSQL database and one SDK worker (concurrency 10)
 * with nothing to do; counts the database's transactions and the worker's
 * HTTP requests over 30 s.
 */
import { startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import pg from 'pg';
import { SERVICES } from './config.ts';

const IDLE_MS = 30_000;
const database = `workq_idle_${process.pid}`;
const adminUrl = SERVICES.postgresUrl.replace(/\/[^/]*$/, '/postgres');
const admin = new pg.Client(adminUrl);
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const transactions = async () =>
  Number(
    (await admin.query('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [database]))
      .rows[0].n,
  );
const quiet = { info: () => undefined, warn: () => undefined, error: console.error };
const server = await startServer({ store: adminUrl.replace(/\/postgres$/, `/${database}`), port: 0, logger: quiet });
let requests = 0;
const counting: typeof fetch = (input, init) => {
  requests++;
  return fetch(input, init);
};
const worker = createClient({ url: server.url, jobs, fetch: counting }).consume(
  'sendEmail',
  async () => ({ messageId: '' }),
  {
    concurrency: 10,
  },
);
try {
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const [before, requestsBefore, started] = [await transactions(), requests, Date.now()];
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  await new Promise((resolve) => setTimeout(resolve, 600)); // statistics are flushed every 500 ms
  const seconds = (Date.now() - started) / 1000;
  console.log(
    `idle worker (concurrency 10), ${seconds.toFixed(0)} s: ${(((await transactions()) - before) / seconds).toFixed(2)} store transactions/s, ` +
      `${((requests - requestsBefore) / seconds).toFixed(3)} HTTP requests/s from the worker`,
  );
} finally {
  await worker.close();
  await server.close();
  await admin.query(`DROP DATABASE IF EXISTS ${database}`);
  await admin.end();
}
