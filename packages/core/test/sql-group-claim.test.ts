import {
  freshPostgresSchema,
  MYSQL_URL,
  mysqlUnreachableReason,
  mysqlUrl,
  POSTGRES_URL,
  postgresUnreachableReason,
} from '@workq/test-support';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newLeaseToken } from '../src/engine/ids.ts';
import type { ClaimedRecord, NewJob, QueueSettingsChange, Store } from '../src/engine/store.ts';
import { createMysqlStore } from '../src/stores/mysql/index.ts';
import { createPgliteStore, createPostgresStore } from '../src/stores/postgres/index.ts';
import { newJob } from './support/fixtures.ts';

/** A store of one SQL kind in a database or schema of its own, and how to drop it. */
interface OpenedStore {
  store: Store;
  drop(): Promise<void>;
}

async function openMysql(): Promise<OpenedStore> {
  const database = `workq_g_${Math.random().toString(36).slice(2, 10)}`;
  const admin = await mysql.createConnection(MYSQL_URL);
  await admin.query(`CREATE DATABASE \`${database}\``);
  const store = await createMysqlStore({ url: mysqlUrl(database), poolSize: 2 });
  return {
    store,
    drop: async () => {
      await store.close();
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await admin.end();
    },
  };
}

async function openPostgres(): Promise<OpenedStore> {
  const fresh = freshPostgresSchema('workq_g');
  const store = await createPostgresStore({ connectionString: POSTGRES_URL, schema: fresh.schema });
  return {
    store,
    drop: async () => {
      await store.close();
      await fresh.drop();
    },
  };
}

async function openPglite(): Promise<OpenedStore> {
  const store = await createPgliteStore();
  return { store, drop: () => store.close() };
}

const stores = [
  { kind: 'mysql', unreachable: await mysqlUnreachableReason(), open: openMysql },
  { kind: 'postgres', unreachable: await postgresUnreachableReason(), open: openPostgres },
  { kind: 'pglite', unreachable: undefined, open: openPglite },
];
for (const { kind, unreachable } of stores) {
  if (unreachable) console.log(`${kind} grouped claim tests: skipped — ${unreachable}`);
}

/**
 * The grouped claim of the SQL stores (MySQL's group-claim.ts, PostgreSQL's `claim_under_limits`): the walk from
 * the cursor, its wrap, and its caps, with claims of one job and of many.
 */
for (const { kind, unreachable, open } of stores) {
  describe.skipIf(unreachable !== undefined)(`${kind} grouped claim`, () => {
    let opened: OpenedStore;
    let store: Store;
    const now = new Date();
    const groupOf = new Map<string, string>();

    beforeAll(async () => {
      opened = await open();
      store = opened.store;
    });

    afterAll(async () => {
      await opened?.drop();
    });

    async function grouped(name: string, change: QueueSettingsChange): Promise<void> {
      await store.updateQueueSettings(name, { grouped: true, ...change }, now);
    }

    async function enqueue(name: string, group: string, count: number, overrides: Partial<NewJob> = {}) {
      const jobs = Array.from({ length: count }, () =>
        newJob(name, { runAt: now, createdAt: now, group, ...overrides }),
      );
      await store.insertJobs(jobs);
      for (const job of jobs) groupOf.set(job.id, group);
      return jobs.map((job) => job.id);
    }

    const tokenOf = new Map<string, string>();

    async function claim(name: string, limit: number): Promise<ClaimedRecord[]> {
      const leaseToken = newLeaseToken();
      const request = { name, minVersion: 1, maxVersion: 1, leaseToken, workerId: 'w', leaseMs: null };
      const { jobs } = await store.claimLimitedJobs({ ...request, limit, now });
      for (const { id } of jobs) tokenOf.set(id, leaseToken);
      return jobs;
    }

    async function complete(jobs: readonly ClaimedRecord[]): Promise<void> {
      const done = await store.completeJobs(
        jobs.map(({ id }) => ({ id, leaseToken: tokenOf.get(id) ?? '', result: null })),
        now,
      );
      expect(done).toHaveLength(jobs.length);
    }

    const groupsOf = (jobs: readonly ClaimedRecord[]) => jobs.map(({ id }) => groupOf.get(id));

    it('goes round the groups in name order from the cursor, and back to the cursor’s own group when it is alone', async () => {
      const name = 'wrap';
      await grouped(name, { groupConcurrency: 1 });
      for (const group of ['c', 'a', 'b']) await enqueue(name, group, 2);
      const started: (string | undefined)[] = [];
      for (let i = 0; i < 6; i++) {
        const jobs = await claim(name, 1);
        started.push(...groupsOf(jobs));
        await complete(jobs);
      }
      expect(started).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
      await enqueue(name, 'b', 3);
      for (let i = 0; i < 3; i++) {
        const jobs = await claim(name, 1);
        expect(groupsOf(jobs)).toEqual(['b']);
        await complete(jobs);
      }
      expect(await claim(name, 1)).toEqual([]);
    });

    it('groupConcurrency 2: a batch takes one job per group per round, at most two per group, in priority order', async () => {
      const name = 'pairs';
      await grouped(name, { groupConcurrency: 2 });
      const [x0, x5, x1, x3] = await Promise.all([0, 5, 1, 3].map((priority) => enqueue(name, 'x', 1, { priority })));
      const ys = await enqueue(name, 'y', 3);
      const first = await claim(name, 10);
      expect(first.map(({ id }) => id)).toEqual([x5?.[0], ys[0], x3?.[0], ys[1]]);
      expect(await claim(name, 10)).toEqual([]);
      await complete(first.filter(({ id }) => groupOf.get(id) === 'x'));
      const second = await claim(name, 10);
      expect(second.map(({ id }) => id)).toEqual([x1?.[0], x0?.[0]]);
    });

    it('a concurrency limit caps a grouped claim, counted with the groups it walks', async () => {
      const name = 'capped';
      await grouped(name, { groupConcurrency: 1, concurrency: 3 });
      for (const group of ['g0', 'g1', 'g2', 'g3', 'g4']) await enqueue(name, group, 2);
      const first = await claim(name, 10);
      expect(groupsOf(first)).toEqual(['g0', 'g1', 'g2']);
      expect(await claim(name, 10)).toEqual([]);
      await complete(first.slice(0, 1));
      expect(groupsOf(await claim(name, 10))).toEqual(['g3']);
    });

    it('finds the one group with room among 200 full ones, walking past the end and round from the start', async () => {
      const name = 'crowded';
      await grouped(name, { groupConcurrency: 1 });
      const groups = Array.from({ length: 200 }, (_, i) => `g${String(i).padStart(3, '0')}`);
      for (const group of groups) await enqueue(name, group, 2);
      const held = [...(await claim(name, 150)), ...(await claim(name, 50))];
      expect(groupsOf(held)).toEqual(groups);
      await complete(held.filter(({ id }) => groupOf.get(id) === 'g120'));
      expect(groupsOf(await claim(name, 5))).toEqual(['g120']);
      expect(await claim(name, 5)).toEqual([]);
    });

    it('a claim of one job walks past full groups one at a time, round from the start, to the cursor', async () => {
      const name = 'crowded-one';
      await grouped(name, { groupConcurrency: 1 });
      const groups = Array.from({ length: 50 }, (_, i) => `g${String(i).padStart(3, '0')}`);
      for (const group of groups) await enqueue(name, group, 2);
      const held = await claim(name, 50);
      expect(groupsOf(held)).toEqual(groups);
      await complete(held.filter(({ id }) => ['g007', 'g030'].includes(groupOf.get(id) ?? '')));
      // The cursor is at g049, the last group leased from: the walk wraps round to g007, then goes on to g030.
      expect(groupsOf(await claim(name, 1))).toEqual(['g007']);
      expect(groupsOf(await claim(name, 1))).toEqual(['g030']);
      expect(await claim(name, 1)).toEqual([]);
    });
  });
}
