import {
  mysqlUnreachableReason,
  mysqlUrl,
  startTcpProxy,
  type TcpProxy,
  until,
  MYSQL_URL as url,
} from '@workq/test-support';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/engine/store.ts';
import { createMysqlStore, type MysqlStoreOptions } from '../src/stores/mysql/index.ts';
import { sqlDate } from '../src/stores/mysql/records.ts';
import { tableNames } from '../src/stores/mysql/tables.ts';
import { rejection } from './support/fixtures.ts';

const POLL_MS = 50;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const skipReason = await mysqlUnreachableReason();
const serverUp = skipReason === undefined;
if (skipReason) console.log(`mysql notifier tests: skipped — ${skipReason}`);

describe.skipIf(!serverUp)('mysql store wake-ups (polled notifier)', () => {
  const database = `workq_t_${Math.random().toString(36).slice(2, 10)}`;
  const wakeups = `\`${database}\`.${tableNames('workq_').wakeups}`;
  let admin: mysql.Connection;
  const stores: Store[] = [];
  const proxies: TcpProxy[] = [];

  /** Each store has its own pool, as separate processes would. */
  async function open(options: Partial<MysqlStoreOptions> = {}): Promise<Store> {
    const store = await createMysqlStore({
      url: mysqlUrl(database),
      poolSize: 4,
      wakeupPollMs: POLL_MS,
      ...options,
    });
    stores.push(store);
    return store;
  }

  async function subscribe(store: Store): Promise<{ received: string[]; unsubscribe: () => Promise<void> }> {
    const received: string[] = [];
    const unsubscribe = await store.notifier!.subscribe((message) => received.push(message));
    return { received, unsubscribe };
  }

  beforeAll(async () => {
    admin = await mysql.createConnection(url);
    await admin.query(`CREATE DATABASE \`${database}\``);
  });

  afterAll(async () => {
    await Promise.allSettled(stores.map((store) => store.close()));
    await Promise.allSettled(proxies.map((proxy) => proxy.close()));
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin.end();
  });

  it('delivers a message published on one store to a subscriber on another, within a few polls', async () => {
    const [publisher, subscriber] = [await open(), await open()];
    expect(subscriber.notifier).toBeDefined();
    await publisher.notifier!.publish('before-subscribe');
    const { received, unsubscribe } = await subscribe(subscriber);
    const publishedAt = Date.now();
    await publisher.notifier!.publish('imageConvert\nfinished:a,b');
    await until(() => received.length > 0, 2_000);
    expect(Date.now() - publishedAt).toBeLessThan(10 * POLL_MS + 500);
    await sleep(4 * POLL_MS);
    // Nothing from before the subscription is replayed; the message arrives once, as published.
    expect(received).toEqual(['imageConvert\nfinished:a,b']);

    await unsubscribe();
    await publisher.notifier!.publish('after-unsubscribe');
    await sleep(4 * POLL_MS);
    expect(received).toEqual(['imageConvert\nfinished:a,b']);
  });

  it('delivers every message of many concurrent publishers exactly once to each subscriber', async () => {
    const publishers = await Promise.all([open(), open(), open(), open()]);
    const subscriptions = await Promise.all([subscribe(publishers[0]!), subscribe(await open())]);
    const expected = publishers.flatMap((_, p) => Array.from({ length: 200 }, (_, i) => `job${p}.${i}`));
    await Promise.all(
      publishers.flatMap((store, p) => Array.from({ length: 200 }, (_, i) => store.notifier!.publish(`job${p}.${i}`))),
    );
    for (const { received } of subscriptions) await until(() => received.length >= expected.length, 10_000);
    await sleep(4 * POLL_MS);
    for (const { received, unsubscribe } of subscriptions) {
      await unsubscribe();
      expect(received).toHaveLength(expected.length);
      expect([...received].sort()).toEqual([...expected].sort());
    }
  });

  it('delivers a message whose lower seq commits after a higher one was read', async () => {
    const [publisher, subscriber] = [await open(), await open()];
    const { received, unsubscribe } = await subscribe(subscriber);
    const slow = await mysql.createConnection(mysqlUrl(database));
    try {
      await slow.beginTransaction();
      const [late] = await slow.query<mysql.ResultSetHeader>(
        `INSERT INTO ${wakeups} (message, created_at) VALUES ('late', UTC_TIMESTAMP(3))`,
      );
      await publisher.notifier!.publish('early');
      await until(() => received.includes('early'), 2_000);
      const [rows] = await admin.query<mysql.RowDataPacket[]>(`SELECT seq FROM ${wakeups} WHERE message = 'early'`);
      expect(Number(late.insertId)).toBeLessThan(Number(rows[0]?.seq));
      await sleep(3 * POLL_MS);
      await slow.commit();
      await until(() => received.includes('late'), 2_000);
      await sleep(4 * POLL_MS);
      expect(received).toEqual(['early', 'late']);
    } finally {
      await slow.end();
      await unsubscribe();
    }
  });

  it("sends '*' once polls succeed again after the server was unreachable, then resumes", async () => {
    const target = new URL(url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port || 3306));
    proxies.push(proxy);
    const publisher = await open();
    const subscriber = await open({ url: mysqlUrl(database, proxy.port), connectTimeoutMs: 1_000 });
    const { received, unsubscribe } = await subscribe(subscriber);
    await publisher.notifier!.publish('first');
    await until(() => received.includes('first'), 2_000);

    proxy.cut();
    await publisher.notifier!.publish('during-outage');
    await sleep(6 * POLL_MS);
    expect(received).toEqual(['first']);
    proxy.restore();
    await until(() => received.includes('*'), 5_000);
    await publisher.notifier!.publish('after');
    await until(() => received.includes('after'), 2_000);
    // The resync skips what was stored during the outage: '*' already told the listener to look at everything.
    expect(received).toEqual(['first', '*', 'after']);
    await unsubscribe();
  });

  it('trims messages older than a minute, in batches, when a process publishes', async () => {
    const [before] = await admin.query<mysql.RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${wakeups}`);
    const fiveMinutesAgo = sqlDate(new Date(Date.now() - 5 * 60_000));
    const old = Array.from({ length: 2_500 }, () => ['old', fiveMinutesAgo]);
    await admin.query(`INSERT INTO ${wakeups} (message, created_at) VALUES ?`, [old]);
    const store = await open();
    await store.notifier!.publish('recent');
    const count = async (where: string) =>
      Number(
        (await admin.query<mysql.RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${wakeups} WHERE ${where}`))[0][0]?.n,
      );
    await until(async () => (await count(`message = 'old'`)) === 0, 5_000);
    expect(await count(`message = 'recent'`)).toBe(1);
    expect(await count('TRUE')).toBe(Number(before[0]?.n) + 1);
  });

  it('stops polling on close, leaving no query running, and its timer never holds the process open', async () => {
    const pool = mysql.createPool({ uri: mysqlUrl(database), connectionLimit: 2 });
    let running = 0;
    let afterClose = 0;
    let closed = false;
    const query = pool.query.bind(pool);
    pool.query = ((...args: Parameters<typeof query>) => {
      running++;
      if (closed) afterClose++;
      return query(...args).finally(() => running--);
    }) as typeof pool.query;
    try {
      for (let round = 0; round < 10; round++) {
        const store = await createMysqlStore({ pool, wakeupPollMs: 5 });
        await store.notifier!.subscribe(() => undefined);
        await sleep(Math.random() * 30);
        await store.close();
        closed = true;
        expect(running, `round ${round}`).toBe(0);
        await sleep(20);
        expect(afterClose, `round ${round}`).toBe(0);
        closed = false;
      }
    } finally {
      await pool.end();
    }
    // A long interval keeps the poll timer pending while the timers are counted.
    const store = await open({ wakeupPollMs: 60_000 });
    await store.notifier!.publish('warm-up');
    const timers = process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    await store.notifier!.subscribe(() => undefined);
    // The poll timer is unref'd: even while subscribed it would not keep the process alive.
    expect(process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length).toBe(timers);
    await store.close();
    await expect(store.notifier!.subscribe(() => undefined)).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      retryable: false,
    });
  });

  it('turns wake-ups off with wakeupPollMs: 0, and rejects a negative interval', async () => {
    const store = await open({ wakeupPollMs: 0 });
    expect(store.notifier).toBeUndefined();
    expect((await rejection(createMysqlStore({ url: mysqlUrl(database), wakeupPollMs: -1 }))).code).toBe('VALIDATION');
  });
});
