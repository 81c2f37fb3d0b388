import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { describeEachStore, type FreshStore, SHARED_STORES, serverStore } from '../support/stores.ts';

/**
 * Long enough that only the store's cross-server wake-ups can explain a fast delivery: LISTEN/NOTIFY on
 * PostgreSQL, the wakeups table polled every 100 ms on MySQL/MariaDB, change streams on MongoDB.
 */
const POLL_INTERVAL_MS = 30_000;
const JOB_COUNT = 50;
/** Jobs enqueued one at a time, each waited for, to time the cross-server wake-up. */
const SINGLE_JOBS = 20;

/** A flow whose parent's worker waits on one server while its children complete through the other. */
const flowJobs = defineCatalog({
  tally: defineJob({ version: 1, payload: z.object({ run: z.string() }) }),
  tallyItem: defineJob({ version: 1, payload: z.object({ n: z.number().int() }), result: z.number().int() }),
});

await describeEachStore(SHARED_STORES, 'two queue servers on one $label store', ({ label, open }) => {
  let target: FreshStore | undefined;
  let serverA: QueueServer;
  let serverB: QueueServer;
  const workers: Worker[] = [];

  beforeAll(async () => {
    target = await open();
    const options = { port: 0, pollIntervalMs: POLL_INTERVAL_MS, logger: collectingLogger() };
    serverA = await startServer({ ...options, store: await serverStore(target) });
    serverB = await startServer({ ...options, store: await serverStore(target) });
  });

  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await serverA?.close();
    await serverB?.close();
    await target?.drop();
  });

  it('wakes a consumer waiting on B when a producer enqueues on A', async () => {
    const producer = createClient({ url: serverA.url, jobs });
    const consumer = createClient({ url: serverB.url, jobs });
    const handledAt = new Map<string, number>();
    workers.push(
      consumer.consume(
        'sendEmail',
        async (job) => {
          handledAt.set(job.id, Date.now());
          return { messageId: `m-${job.payload.subject}` };
        },
        { concurrency: 4, pollWaitMs: 25_000 },
      ),
    );
    // The consumer is waiting once server B has recorded it in the worker registry (on its first claim).
    const adminB = rawClient(serverB.url);
    await until(async () => (await adminB.admin.stats.query()).consumers.length > 0, 10_000, 50);
    await new Promise((r) => setTimeout(r, 300));

    const enqueuedAt = Date.now();
    const first = await producer.enqueue.sendEmail({ to: 'a@example.com', subject: 'first', body: 'hi' });
    await until(() => handledAt.has(first.id), POLL_INTERVAL_MS / 2, 10);
    const wakeMs = (handledAt.get(first.id) as number) - enqueuedAt;
    expect(wakeMs).toBeLessThan(3_000);

    const rest = await producer.enqueueMany.sendEmail(
      Array.from({ length: JOB_COUNT - 1 }, (_, i) => ({ to: `u${i}@example.com`, subject: `s${i}`, body: 'hi' })),
    );
    const handles = [first, ...rest];
    const burstAt = Date.now();
    await until(() => handles.every((h) => handledAt.has(h.id)), 10_000, 10);
    const burstMs = Date.now() - burstAt;
    expect(burstMs).toBeLessThan(POLL_INTERVAL_MS / 3);

    // One job at a time, so each delivery waits on a cross-server wake-up rather than riding on a busy consumer;
    // a random pause first, so enqueues do not fall into step with a polled store's wake-up reads.
    const singleMs: number[] = [];
    for (let i = 0; i < SINGLE_JOBS; i++) {
      await new Promise((r) => setTimeout(r, Math.random() * 200));
      const startedAt = Date.now();
      const handle = await producer.enqueue.sendEmail({ to: 'one@example.com', subject: `one${i}`, body: 'hi' });
      await until(() => handledAt.has(handle.id), POLL_INTERVAL_MS / 2, 5);
      singleMs.push((handledAt.get(handle.id) as number) - startedAt);
    }
    singleMs.sort((a, b) => a - b);
    const p50 = singleMs[Math.floor(SINGLE_JOBS / 2)] as number;
    expect(p50).toBeLessThan(1_000);
    console.info(
      `multi-server (${label}): first job handled ${wakeMs} ms after enqueue; ${JOB_COUNT} jobs in ${burstMs} ms; ` +
        `${SINGLE_JOBS} single jobs: p50 ${p50} ms, max ${singleMs.at(-1)} ms`,
    );

    // Results and statuses read the same through either server.
    const viaA = createClient({ url: serverA.url, jobs });
    const viaB = createClient({ url: serverB.url, jobs });
    for (const handle of handles) {
      const statusA = await viaA.job('sendEmail', handle.id).status();
      const statusB = await viaB.job('sendEmail', handle.id).status();
      expect(statusA).toEqual(statusB);
      expect(statusA.state).toBe('completed');
    }
    await expect(viaB.job('sendEmail', first.id).result({ timeoutMs: 5_000 })).resolves.toEqual({
      messageId: 'm-first',
    });
    await expect(viaA.job('sendEmail', first.id).result({ timeoutMs: 5_000 })).resolves.toEqual({
      messageId: 'm-first',
    });
    const lastIndex = JOB_COUNT - 2;
    await expect(rest[lastIndex]?.result({ timeoutMs: 5_000 })).resolves.toEqual({ messageId: `m-s${lastIndex}` });
  });

  it('wakes a result wait on A when the job completes through B', async () => {
    const producer = createClient({ url: serverA.url, jobs });
    const consumer = createClient({ url: serverB.url, jobs });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = false;
    workers.push(
      consumer.consume('generateReport', async () => {
        started = true;
        await gate;
        return { url: 'r', rows: 1 };
      }),
    );
    const handle = await producer.enqueue.generateReport({
      accountId: 'cross',
      kind: 'usage',
      from: '2026-01-01',
      to: '2026-01-31',
    });
    await until(() => started, 10_000, 10);
    // A's result request is now long-polling; only B sees the job finish.
    const waiting = handle.result({ timeoutMs: 25_000 });
    await new Promise((r) => setTimeout(r, 300));
    const releasedAt = Date.now();
    release();
    await expect(waiting).resolves.toEqual({ url: 'r', rows: 1 });
    const resultMs = Date.now() - releasedAt;
    console.info(`multi-server (${label}): result through A ${resultMs} ms after the job finished on B`);
    expect(resultMs).toBeLessThan(3_000);
  }, 40_000);

  it("wakes a parent's worker waiting on B when its last child completes through A", async () => {
    const viaA = createClient({ url: serverA.url, jobs: flowJobs, logger: false });
    const viaB = createClient({ url: serverB.url, jobs: flowJobs, logger: false });
    let lastChildAt = 0;
    let parentAt = 0;
    const results: number[][] = [];
    workers.push(
      viaB.consume('tally', async (_job, ctx) => {
        parentAt = Date.now();
        results.push(await ctx.childResults('tallyItem'));
      }),
    );
    // The parent's worker is waiting on B once B has recorded it in the worker registry (on its first claim).
    const adminB = rawClient(serverB.url);
    await until(async () => (await adminB.admin.stats.query()).consumers.some((c) => c.name === 'tally'), 10_000, 50);
    await viaA.enqueue.tally({ run: 'cross' }, { children: [1, 2, 3].map((n) => viaA.child.tallyItem({ n })) });
    workers.push(
      viaA.consume(
        'tallyItem',
        (job) => {
          lastChildAt = Date.now();
          return job.payload.n;
        },
        { concurrency: 3 },
      ),
    );
    await until(() => results.length > 0, POLL_INTERVAL_MS / 2, 10);
    expect(results).toEqual([[1, 2, 3]]);
    const wakeMs = parentAt - lastChildAt;
    console.info(`multi-server (${label}): parent on B started ${wakeMs} ms after its last child ran on A`);
    expect(wakeMs).toBeLessThan(3_000);
  }, 40_000);

  it('answers an ack repeated through B as completed when A applied it, and a forged one as lost', async () => {
    const producer = createClient({ url: serverA.url, jobs });
    // A job type no worker of this file consumes, so the raw claim below is the only one.
    const handle = await producer.enqueue.imageConvert({ source: 'again.png', output: 'again.webp' });
    const claimInput = { name: 'imageConvert', minVersion: 1, maxVersion: 2, limit: 1, workerId: 'repeat-test' };
    const viaA = rawClient(serverA.url);
    const viaB = rawClient(serverB.url);
    const { jobs: claimed } = await viaA.consumer.claim.mutate(claimInput);
    expect(claimed.map((job) => job.id)).toEqual([handle.id]);
    const { id, leaseToken } = claimed[0] as (typeof claimed)[number];

    const first = await viaA.consumer.complete.mutate({ items: [{ id, leaseToken, result: { bytes: 1 } }] });
    expect(first).toEqual([{ id, ok: true }]);
    // The worker never read that answer and sends the same ack again, through the other server.
    const repeated = await viaB.consumer.complete.mutate({ items: [{ id, leaseToken, result: { bytes: 2 } }] });
    expect(repeated).toEqual([{ id, ok: true }]);
    const forged = await viaB.consumer.complete.mutate({
      items: [{ id, leaseToken: 'not-the-lease', result: { bytes: 3 } }],
    });
    expect(forged).toEqual([{ id, ok: false }]);
    expect(await handle.status()).toMatchObject({ state: 'completed', attempts: 1, result: { bytes: 1 } });
  });
});
