import { mysqlUnreachableReason, mysqlUrl, startTcpProxy, MYSQL_URL as url, waitFor } from '@workq/test-support';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newLeaseToken } from '../src/engine/ids.ts';
import type { Store } from '../src/engine/store.ts';
import { createMysqlStore, type MysqlStoreOptions } from '../src/stores/mysql/index.ts';
import { SCHEMA_VERSION } from '../src/stores/mysql/migrations.ts';
import { sqlDate } from '../src/stores/mysql/records.ts';
import { claimCandidatesSql } from '../src/stores/mysql/sql/lock-ready-jobs.ts';
import { tableNames } from '../src/stores/mysql/tables.ts';
import { openStore } from '../src/stores/open-store.ts';
import { expectUnreachable, newJob, rejection } from './support/fixtures.ts';

describe('createMysqlStore without a server', () => {
  it('fails fast with a retryable UNAVAILABLE that names the server but not the password', async () => {
    await expectUnreachable(() => createMysqlStore({ url: 'mysql://root:s3cret@127.0.0.1:1/test' }), {
      names: '127.0.0.1:1',
      hides: 's3cret',
      withinMs: 10_000,
    });
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

const skipReason = await mysqlUnreachableReason();
if (skipReason) console.log(`mysql store tests: skipped — ${skipReason}`);

describe.skipIf(skipReason !== undefined)('mysql store', () => {
  const database = `workq_t_${Math.random().toString(36).slice(2, 10)}`;
  const dbUrl = mysqlUrl(database);
  let admin: mysql.Connection;
  const stores: Store[] = [];

  async function open(options: Partial<MysqlStoreOptions> = {}): Promise<Store> {
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

  it('reads wakeupPollMs from a store URL and keeps it from the driver; 0 turns the polled wake-ups off', async () => {
    const opened = async (storeUrl: string) => {
      const store = await openStore(storeUrl);
      stores.push(store);
      return store;
    };
    expect((await opened(`${dbUrl}?wakeupPollMs=0`)).notifier).toBeUndefined();
    expect((await opened(dbUrl)).notifier).toBeDefined();
    expect((await rejection(openStore(`${dbUrl}?wakeupPollMs=soon`))).code).toBe('VALIDATION');
  });

  it('builds the schema once: concurrent starts and restarts leave one ledger row per schema version', async () => {
    const t = tableNames('mig_');
    const [first, second] = await Promise.all([open({ tablePrefix: 'mig_' }), open({ tablePrefix: 'mig_' })]);
    const now = new Date();
    const [outcome] = await first!.insertJobs([newJob('kept', { runAt: now, createdAt: now })]);
    await second!.close();
    await open({ tablePrefix: 'mig_' });
    const [rows] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT version, name FROM \`${database}\`.${t.migrations} ORDER BY version`,
    );
    expect(rows.map((row) => Number(row.version))).toEqual([SCHEMA_VERSION]);
    expect((await first!.getJob(outcome!.job!.id))?.id).toBe(outcome!.job!.id);
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

  it('claims without reading past jobs due later, and moves them in once due', async () => {
    const pool = mysql.createPool({ uri: dbUrl, connectionLimit: 1 });
    try {
      const store = await createMysqlStore({ pool, tablePrefix: 'later_', wakeupPollMs: 0 });
      stores.push(store);
      const now = new Date();
      const later = new Date(now.getTime() + 3_600_000);
      const name = 'later';
      await store.insertJobs(Array.from({ length: 2_000 }, () => newJob(name, { runAt: later, createdAt: now })));
      const due = await store.insertJobs(Array.from({ length: 3 }, () => newJob(name, { runAt: now, createdAt: now })));
      const claim = { name, minVersion: 1, maxVersion: 1, leaseToken: 't', workerId: 'w', leaseMs: null, limit: 10 };
      // Index entries read in order, on the pool's one connection, which the store's claim uses too.
      const readNext = async () => {
        const [rows] = await pool.query<mysql.RowDataPacket[]>(`SHOW SESSION STATUS LIKE 'Handler_read_next'`);
        return Number(rows[0]?.Value);
      };
      const before = await readNext();
      const claimed = await store.claimJobs({ ...claim, now });
      // Stepping over the later jobs reads each of their 2,000 index entries.
      expect((await readNext()) - before).toBeLessThan(100);
      expect(claimed.map((job) => job.id).sort()).toEqual(due.map((outcome) => outcome.job!.id).sort());
      expect(await store.claimJobs({ ...claim, now: later })).toHaveLength(10);
    } finally {
      await pool.end();
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
      const job = await store.getJob(outcome!.job!.id);
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
    expect(again.map((o) => o.job!.id)).toEqual(outcomes.map((o) => o.job!.id));
    expect(again.map((o) => o.job!.idempotencyKey)).toEqual(keys);
  });

  it('reports a missing database as UNAVAILABLE, not retryable', async () => {
    const error = await rejection(createMysqlStore({ url: mysqlUrl(`${database}_missing`) }));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.retryable).toBe(false);
  });

  describe('driver errors, provoked on the real server', () => {
    const user = `${database}_u`;
    const password = 's3cret-pw-9';
    /** The store's URL with a password, to show that no message ever carries it. */
    const authUrl = (port?: number) => {
      const parsed = new URL(dbUrl);
      parsed.username = user;
      parsed.password = password;
      if (port !== undefined) parsed.port = String(port);
      return parsed.toString();
    };
    const host = `${new URL(url).hostname}:${new URL(url).port || '3306'}`;

    beforeAll(async () => {
      await admin.query(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
      await admin.query(`GRANT ALL ON \`${database}\`.* TO '${user}'@'%'`);
    });

    afterAll(async () => {
      await admin.query(`DROP USER IF EXISTS '${user}'@'%'`);
    });

    /**
     * The thread id of the store's connection running a statement that starts with `statement`, once it has
     * run for a while: the statements here take a millisecond unless they wait for a row lock.
     */
    function blockedOn(statement: string): Promise<number> {
      const blocked = async () => {
        const [rows] = await admin.query<mysql.RowDataPacket[]>(
          `SELECT ID AS id FROM information_schema.PROCESSLIST
           WHERE DB = ? AND COMMAND = 'Query' AND TIME_MS > 200 AND TRIM(INFO) LIKE ?`,
          [database, `${statement}%`],
        );
        return rows[0] ? Number(rows[0].id) : undefined;
      };
      return waitFor(blocked, 10_000).catch(() => {
        throw new Error(`no connection was blocked on ${statement}`);
      });
    }

    /** A second session, as another process would hold, that locks rows of the jobs table. */
    async function otherSession(): Promise<mysql.Connection> {
      const connection = await mysql.createConnection(dbUrl);
      await connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
      return connection;
    }

    async function deadlockCount(): Promise<number> {
      const [rows] = await admin.query<mysql.RowDataPacket[]>(`SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'`);
      return Number(rows[0]?.Value);
    }

    it('re-runs a transaction MySQL rolled back to break a real deadlock, and it succeeds', async () => {
      const store = await open({ tablePrefix: 'deadlock_' });
      const jobs = tableNames('deadlock_').jobs;
      const now = new Date();
      await store.insertJobs([
        newJob('dl', { runAt: now, createdAt: now }),
        newJob('dl', { runAt: now, createdAt: now }),
      ]);
      const leaseToken = newLeaseToken();
      const claim = { name: 'dl', minVersion: 1, maxVersion: 1, leaseToken, workerId: 'w', leaseMs: 60_000, now };
      const [low, high] = (await store.claimJobs({ ...claim, limit: 2 })).map((job) => job.id).sort();
      const other = await otherSession();
      try {
        await other.query(`CREATE TABLE ballast (n INT PRIMARY KEY) ENGINE=InnoDB`);
        await other.beginTransaction();
        // Many changed rows make the other session the heavier transaction, so InnoDB picks the store's as the victim.
        await other.query(`INSERT INTO ballast (n) VALUES ?`, [Array.from({ length: 200 }, (_, n) => [n])]);
        await other.query(`SELECT id FROM ${jobs} WHERE id = ? FOR UPDATE`, [high]);
        const deadlocksBefore = await deadlockCount();
        let settled = false;
        // Its update locks the low row, then waits for the high one...
        const completing = store
          .completeJobs(
            [high, low].map((id) => ({ id: id!, leaseToken, result: null })),
            now,
          )
          .finally(() => {
            settled = true;
          });
        await blockedOn('UPDATE');
        // ...while the other session asks for the low one: a cycle. It gets the row only because the store's
        // transaction was rolled back, which releases it.
        await other.query(`SELECT id FROM ${jobs} WHERE id = ? FOR UPDATE`, [low]);
        expect(await deadlockCount()).toBeGreaterThan(deadlocksBefore);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(settled).toBe(false);
        await other.commit();
        expect((await completing).sort()).toEqual([low, high]);
        expect((await store.getJob(low!))?.state).toBe('completed');
      } finally {
        await other.end();
      }
    });

    it('reports a lock wait timeout as retryable UNAVAILABLE, without retrying it or quoting the server', async () => {
      const pool = mysql.createPool({ uri: authUrl(), connectionLimit: 2 });
      pool.pool.on('connection', (connection) => {
        connection.query('SET SESSION innodb_lock_wait_timeout = 1', () => undefined);
      });
      const other = await otherSession();
      try {
        const store = await open({ tablePrefix: 'lockwait_', pool, url: authUrl() });
        const [outcome] = await store.insertJobs([newJob('lw')]);
        const id = outcome!.job!.id;
        await other.beginTransaction();
        await other.query(`SELECT id FROM ${tableNames('lockwait_').jobs} WHERE id = ? FOR UPDATE`, [id]);
        const started = Date.now();
        const error = await rejection(store.cancelJob(id, new Date()));
        // One wait of innodb_lock_wait_timeout (1 s), not one per retry.
        expect(Date.now() - started).toBeLessThan(2_500);
        expect(error.code).toBe('UNAVAILABLE');
        expect(error.retryable).toBe(true);
        expect(error.message).toContain(host);
        expect(error.message).not.toContain(password);
        expect(error.message).not.toMatch(/exceeded|try restarting/i);
        await other.rollback();
        expect((await store.cancelJob(id, new Date()))?.state).toBe('cancelled');
      } finally {
        await other.end();
        await pool.end();
      }
    });

    it.each([
      {
        kill: 'CONNECTION',
        what: 'a connection killed mid-statement',
        serverText: /server closed the connection|killed/i,
      },
      { kill: 'QUERY', what: 'a statement stopped by KILL QUERY', serverText: /execution was interrupted/i },
    ])(
      'reports $what as retryable UNAVAILABLE naming host:port only; the store keeps serving',
      async ({ kill, serverText }) => {
        const prefix = `kill_${kill.toLowerCase()}_`;
        const store = await open({ tablePrefix: prefix, url: authUrl() });
        const [outcome] = await store.insertJobs([newJob('killed')]);
        const id = outcome!.job!.id;
        const other = await otherSession();
        try {
          await other.beginTransaction();
          await other.query(`SELECT id FROM ${tableNames(prefix).jobs} WHERE id = ? FOR UPDATE`, [id]);
          const cancelling = rejection(store.cancelJob(id, new Date()));
          await admin.query(`KILL ${kill} ${await blockedOn('UPDATE')}`);
          const error = await cancelling;
          expect(error.code).toBe('UNAVAILABLE');
          expect(error.retryable).toBe(true);
          expect(error.message).toContain(host);
          expect(error.message).not.toContain(password);
          expect(error.message).not.toMatch(serverText);
          await other.rollback();
          // A killed connection is replaced by the pool; an interrupted one serves on.
          expect((await store.cancelJob(id, new Date()))?.state).toBe('cancelled');
        } finally {
          await other.end();
        }
      },
    );

    it('reports a dropped link (a port that closes) as retryable UNAVAILABLE naming that host:port', async () => {
      const target = new URL(url);
      const proxy = await startTcpProxy(target.hostname, Number(target.port || 3306));
      try {
        const store = await open({ tablePrefix: 'dropped_', url: authUrl(proxy.port), connectTimeoutMs: 1_000 });
        await store.insertJobs([newJob('dropped')]);
        proxy.cut();
        const error = await rejection(store.listJobs({ limit: 10 }));
        expect(error.code).toBe('UNAVAILABLE');
        expect(error.retryable).toBe(true);
        expect(error.message).toContain(`${target.hostname}:${proxy.port}`);
        expect(error.message).not.toContain(password);
      } finally {
        await proxy.close();
      }
    });

    it('reports a table dropped under the store as UNAVAILABLE, not retryable, without the server text', async () => {
      const store = await open({ tablePrefix: 'dropped_table_', url: authUrl() });
      await admin.query(`DROP TABLE \`${database}\`.${tableNames('dropped_table_').jobs}`);
      const error = await rejection(store.getJob('missing'));
      expect(error.code).toBe('UNAVAILABLE');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain(host);
      expect(error.message).not.toMatch(/doesn't exist|dropped_table_jobs/);
      expect(error.message).not.toContain(database);
      expect(error.message).not.toContain(password);
      expect(driverCodeOf(error.cause)).toBe('ER_NO_SUCH_TABLE');
    });
  });
});

function driverCodeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}
