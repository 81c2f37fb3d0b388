import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { freshPostgresStore } from '../support/stores.ts';

/** Long enough that only a LISTEN/NOTIFY wake-up can explain a fast delivery. */
const POLL_INTERVAL_MS = 30_000;
const JOB_COUNT = 50;

describe('two queue servers on one PostgreSQL store', () => {
  const target = freshPostgresStore();
  let serverA: QueueServer;
  let serverB: QueueServer;
  const workers: Worker[] = [];

  beforeAll(async () => {
    const options = { store: target.url, port: 0, pollIntervalMs: POLL_INTERVAL_MS, logger: collectingLogger() };
    serverA = await startServer(options);
    serverB = await startServer(options);
  });

  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await serverA?.close();
    await serverB?.close();
    await target.drop();
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
    console.info(`multi-server: first job handled ${wakeMs} ms after enqueue; ${JOB_COUNT} jobs in ${burstMs} ms`);

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
    console.info(`multi-server: result through A ${resultMs} ms after the job finished on B`);
    expect(resultMs).toBeLessThan(3_000);
  }, 40_000);
});
