import { type PrivateMariadb, startPrivateMariadb } from '@workq/test-support';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { WorkqError } from '../src/errors.ts';
import { createMysqlStore } from '../src/stores/mysql/index.ts';
import { rejection } from './support/fixtures.ts';

/**
 * The store escapes values on the client, which is sound only in the SQL
 * mode it pins on each session. These tests run on a MariaDB server of their
 * own whose global `sql_mode` is `NO_BACKSLASH_ESCAPES` (a setting other
 * tests on the shared server must not see), with values built to end a
 * string literal under that mode: none may change another job, and each
 * answer must say what happened.
 */
const HOSTILE = [
  "' OR 1=1 -- ",
  "\\' OR 1=1 -- ",
  "x\\' OR '1'='1",
  '\\',
  "'",
  "\\'; DELETE FROM workq_jobs; -- ",
  "\\\\' OR 1=1 #",
];

let server: PrivateMariadb | undefined;
let skipReason: string | undefined;
const started = await startPrivateMariadb({ sqlMode: 'NO_BACKSLASH_ESCAPES' });
if (typeof started === 'string') {
  skipReason = started;
  console.log(`mysql session-mode tests: skipped — ${skipReason}`);
} else {
  server = started;
}

describe.skipIf(skipReason !== undefined)('mysql store on a server with NO_BACKSLASH_ESCAPES', () => {
  const stores: Store[] = [];
  const pools: mysql.Pool[] = [];

  afterAll(async () => {
    await Promise.allSettled(stores.map((store) => store.close()));
    await Promise.allSettled(pools.map((pool) => pool.end()));
    await server?.stop();
  });

  async function engineOn(options: { callerPool?: boolean } = {}): Promise<Engine> {
    const url = (server as PrivateMariadb).url;
    let store: Store;
    if (options.callerPool) {
      const pool = mysql.createPool({ uri: url, connectionLimit: 2 });
      pools.push(pool);
      store = await createMysqlStore({ pool, tablePrefix: 'caller_' });
    } else {
      store = await createMysqlStore({ url, poolSize: 2 });
    }
    stores.push(store);
    return createEngine({ store, leaseSweepIntervalMs: 0 });
  }

  let engine: Engine;
  beforeAll(async () => {
    engine = await engineOn();
  });

  /** Three `beta` jobs, one of them leased: what no hostile value may touch. */
  async function bystanders(target: Engine, name: string) {
    await target.enqueueMany([1, 2, 3].map((n) => ({ name, version: 1, payload: { n } })));
    const [leased] = await target.claim({ name, maxVersion: 1, limit: 1, workerId: 'w-beta' });
    expect(leased).toBeDefined();
    return async () => (await target.list({ name })).jobs;
  }

  it('the server under test really has NO_BACKSLASH_ESCAPES set globally', async () => {
    const connection = await mysql.createConnection({ uri: (server as PrivateMariadb).url });
    try {
      const [rows] = await connection.query<mysql.RowDataPacket[]>('SELECT @@GLOBAL.sql_mode AS mode');
      expect(String(rows[0]?.mode)).toContain('NO_BACKSLASH_ESCAPES');
    } finally {
      await connection.end();
    }
  });

  it('job ids that end a string literal change no other job, and the answers say nothing matched', async () => {
    const snapshot = await bystanders(engine, 'beta_ids');
    const before = await snapshot();
    for (const id of HOSTILE) {
      const lease = { id, leaseToken: 'not-a-token' };
      expect(await engine.cancel(id), `cancel(${id})`).toBe(false);
      for (const attempt of [
        () => engine.complete(lease, { x: 1 }),
        () => engine.fail(lease, { message: 'x', permanent: true }),
        () => engine.extend(lease, 60_000),
        () => engine.progress(lease, 50),
      ]) {
        const error = await rejection(attempt());
        expect(error, id).toBeInstanceOf(WorkqError);
        expect(error.code, id).toBe('LEASE_LOST');
      }
      expect((await rejection(engine.get(id))).code, `get(${id})`).toBe('NOT_FOUND');
      expect(await engine.retryDead({ ids: [id] }), `retryDead(${id})`).toBe(0);
    }
    expect(await snapshot()).toEqual(before);
  });

  it('idempotency keys and groups that end a string literal are kept as sent and match only themselves', async () => {
    const snapshot = await bystanders(engine, 'beta_keys');
    const before = await snapshot();
    const first = await engine.enqueue({ name: 'alpha_keys', version: 1, payload: {}, idempotencyKey: 'plain' });
    for (const key of HOSTILE) {
      const created = await engine.enqueue({
        name: 'alpha_keys',
        version: 1,
        payload: { key },
        idempotencyKey: key,
        options: { group: key },
      });
      expect(created.created, key).toBe(true);
      const again = await engine.enqueue({ name: 'alpha_keys', version: 1, payload: { key }, idempotencyKey: key });
      expect(again, key).toMatchObject({ id: created.id, created: false });
      const stored = await (stores[0] as Store).getJob(created.id);
      expect(stored, key).toMatchObject({ payload: { key }, idempotencyKey: key, group: key });
    }
    const all = (await engine.list({ name: 'alpha_keys' })).jobs;
    expect(all).toHaveLength(HOSTILE.length + 1);
    expect(all.map((job) => job.id)).toContain(first.id);
    expect(await snapshot()).toEqual(before);
  });

  it('job names that end a string literal pause, list and claim nothing of another type', async () => {
    const snapshot = await bystanders(engine, 'beta_names');
    const before = await snapshot();
    for (const name of HOSTILE) {
      await engine.pause(name);
      expect(await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w-alpha' })).toEqual([]);
      expect((await engine.list({ name })).jobs).toEqual([]);
      expect(await engine.retryDead({ name })).toBe(0);
    }
    const beta = (await engine.queues()).find((queue) => queue.name === 'beta_names');
    expect(beta?.paused).toBe(false);
    expect(await snapshot()).toEqual(before);
  });

  it('schedule keys that end a string literal remove only themselves', async () => {
    const store = stores[0] as Store;
    const schedule = (key: string) => ({
      key,
      cron: '0 * * * *',
      timezone: 'UTC',
      name: 'alpha_schedules',
      version: 1,
      payload: { key },
      options: null,
      updatedAt: new Date(),
    });
    await store.upsertSchedule(schedule('keep-me'));
    for (const key of HOSTILE) {
      expect(await store.removeSchedule(key), `removeSchedule(${key})`).toBe(false);
      await store.upsertSchedule(schedule(key));
    }
    expect((await store.listSchedules()).map((entry) => entry.key).sort()).toEqual(['keep-me', ...HOSTILE].sort());
    for (const key of HOSTILE) expect(await store.removeSchedule(key), key).toBe(true);
    expect((await store.listSchedules()).map((entry) => entry.key)).toEqual(['keep-me']);
  });

  it('a pool the caller passes in is pinned too', async () => {
    const target = await engineOn({ callerPool: true });
    const snapshot = await bystanders(target, 'beta_pool');
    const before = await snapshot();
    for (const id of HOSTILE) expect(await target.cancel(id), id).toBe(false);
    expect(await snapshot()).toEqual(before);
  });
});
