import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newLeaseToken } from '../src/engine/ids.ts';
import type { Store } from '../src/engine/store.ts';
import { WorkqError } from '../src/errors.ts';
import { createMysqlStore } from '../src/stores/mysql/index.ts';
import { claimCandidatesSql } from '../src/stores/mysql/job-queries.ts';
import { migrations } from '../src/stores/mysql/migrations.ts';
import { sqlDate } from '../src/stores/mysql/rows.ts';
import { tableNames } from '../src/stores/mysql/tables.ts';
import { newJob, rejection } from './support/fixtures.ts';

const url = process.env.WORKQ_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

function withDatabase(database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function reachable(): Promise<boolean> {
  try {
    const connection = await mysql.createConnection({ uri: url, connectTimeout: 5_000 });
    await connection.end();
    return true;
  } catch {
    return false;
  }
}

describe('createMysqlStore without a server', () => {
  it('fails fast with a retryable UNAVAILABLE that names the server but not the password', async () => {
    const started = Date.now();
    const error = await rejection(createMysqlStore({ url: 'mysql://root:s3cret@127.0.0.1:1/test' }));
    expect(error).toBeInstanceOf(WorkqError);
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('127.0.0.1:1');
    expect(error.message).not.toContain('s3cret');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('rejects a table prefix that is not a plain lower-case identifier', async () => {
    for (const tablePrefix of ['Workq_', 'workq-', '1workq', 'a'.repeat(32), 'x`; DROP TABLE y; --']) {
      const error = await rejection(createMysqlStore({ url, tablePrefix }));
      expect(error.code, tablePrefix).toBe('VALIDATION');
    }
  });

  it('needs a url or a pool', async () => {
    expect((await rejection(createMysqlStore({}))).code).toBe('VALIDATION');
  });
});

describe.skipIf(!(await reachable()))('mysql store', () => {
  const database = `workq_t_${Math.random().toString(36).slice(2, 10)}`;
  const dbUrl = withDatabase(database);
  let admin: mysql.Connection;
  const stores: Store[] = [];

  async function open(options: { tablePrefix?: string; pool?: mysql.Pool } = {}): Promise<Store> {
    const store = await createMysqlStore({ url: dbUrl, poolSize: 2, ...options });
    stores.push(store);
    return store;
  }

  beforeAll(async () => {
    admin = await mysql.createConnection(url);
    await admin.query(`CREATE DATABASE \`${database}\``);
  });

  afterAll(async () => {
    await Promise.allSettled(stores.map((store) => store.close()));
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin.end();
  });

  it('applies migrations once: concurrent starts and restarts leave one record per migration', async () => {
    const t = tableNames('mig_');
    const [first, second] = await Promise.all([open({ tablePrefix: 'mig_' }), open({ tablePrefix: 'mig_' })]);
    const now = new Date();
    const [outcome] = await first!.insertJobs([newJob('kept', { runAt: now, createdAt: now })]);
    await second!.close();
    await open({ tablePrefix: 'mig_' });
    const [rows] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT version, name FROM \`${database}\`.${t.migrations} ORDER BY version`,
    );
    expect(rows.map((row) => Number(row.version))).toEqual(migrations(t).map((m) => m.version));
    expect((await first!.getJob(outcome!.job.id))?.id).toBe(outcome!.job.id);
  });

  it('the claim reads the claim index, in order, without scanning finished history', async () => {
    const store = await open({ tablePrefix: 'explain_' });
    const now = new Date();
    const name = 'explained';
    const history = Array.from({ length: 500 }, () => newJob(name, { runAt: now, createdAt: now }));
    await store.insertJobs(history);
    const leaseToken = newLeaseToken();
    const claim = { name, minVersion: 1, maxVersion: 1, leaseToken, workerId: 'w', leaseMs: null, now };
    const claimed = await store.claimJobs({ ...claim, limit: 500 });
    await store.completeJobs(
      claimed.map((job) => ({ id: job.id, leaseToken, result: null })),
      now,
    );
    await store.insertJobs(Array.from({ length: 20 }, () => newJob(name, { runAt: now, createdAt: now })));
    await admin.query(`ANALYZE TABLE \`${database}\`.${tableNames('explain_').jobs}`);

    const connection = await mysql.createConnection(dbUrl);
    try {
      const [plan] = await connection.query<mysql.RowDataPacket[]>(
        `EXPLAIN ${claimCandidatesSql(tableNames('explain_'))}`,
        [name, sqlDate(now), 1, 1, 10],
      );
      expect(plan).toHaveLength(1);
      expect(plan[0]?.key).toBe('claim_order');
      expect(String(plan[0]?.Extra)).not.toMatch(/filesort/i);
      // A lookup on (state, name): only the waiting range of this name is read, never the completed jobs.
      expect(['ref', 'range']).toContain(plan[0]?.type);
      expect(String(plan[0]?.ref ?? 'const,const')).toMatch(/^const,const/);
    } finally {
      await connection.end();
    }
  });

  it('keeps times exact in UTC, whatever time zone the pool was given', async () => {
    const pool = mysql.createPool({ uri: dbUrl, connectionLimit: 2, timezone: '+05:30' });
    try {
      const store = await open({ tablePrefix: 'tz_', pool });
      const runAt = new Date('2030-06-15T23:59:58.123Z');
      const [outcome] = await store.insertJobs([
        newJob('tz', { createdAt: new Date('2030-06-15T12:00:00.007Z'), runAt }),
      ]);
      const job = await store.getJob(outcome!.job.id);
      expect(job?.runAt.toISOString()).toBe(runAt.toISOString());
      expect(job?.createdAt.toISOString()).toBe('2030-06-15T12:00:00.007Z');
      await store.close();
      await store.close();
      // The caller's pool is the caller's: closing the store leaves it open.
      const [rows] = await pool.query<mysql.RowDataPacket[]>('SELECT 1 AS one');
      expect(rows[0]?.one).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('stores idempotency keys byte for byte: case and trailing spaces make different keys', async () => {
    const store = await open({ tablePrefix: 'keys_' });
    const now = new Date();
    const keys = ['order-1', 'ORDER-1', 'order-1 ', 'örder-1', '🔑-1'];
    const outcomes = await store.insertJobs(
      keys.map((key) => newJob('keyed', { runAt: now, createdAt: now, idempotencyKey: key })),
    );
    expect(outcomes.map((o) => o.created)).toEqual(keys.map(() => true));
    const again = await store.insertJobs(
      keys.map((key) => newJob('keyed', { runAt: now, createdAt: now, idempotencyKey: key })),
    );
    expect(again.map((o) => o.job.id)).toEqual(outcomes.map((o) => o.job.id));
    expect(again.map((o) => o.job.idempotencyKey)).toEqual(keys);
  });

  it('reports a missing database as UNAVAILABLE, not retryable', async () => {
    const error = await rejection(createMysqlStore({ url: withDatabase(`${database}_missing`) }));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.retryable).toBe(false);
  });
});
