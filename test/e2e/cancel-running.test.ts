import { defineCatalog, defineJob } from '@workq/core';
import { createClient, isWorkqError } from '@workq/sdk';
import { until } from '@workq/test-support';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { describeEachStore, SERVER_STORES } from '../support/stores.ts';
import { twoServersOnOneStore } from '../support/two-servers.ts';

/** A lease extended every 10 s: a cancellation heard only at the next extension would take that long. */
const LEASE_MS = 30_000;
/** Long enough that only the store's cross-server wake-ups can explain a prompt abort on the other server. */
const POLL_INTERVAL_MS = 30_000;
/** How long each job runs before it is cancelled: one just started, one watched for a while. */
const RUN_BEFORE_CANCEL_MS = [50, 1_500] as const;

const catalog = defineCatalog({
  render: defineJob({
    version: 1,
    payload: z.object({ page: z.number() }),
    defaults: { leaseMs: LEASE_MS, maxAttempts: 1 },
  }),
  report: defineJob({ version: 1, payload: z.object({ reportId: z.string() }) }),
});

/**
 * On each store two servers share, across servers over its wake-ups: PostgreSQL's LISTEN/NOTIFY, MariaDB's
 * polled wake-ups table, MongoDB's change streams (the wire double here).
 */

await describeEachStore(SERVER_STORES, 'cancelling a running job on $label', ({ label, open }) => {
  const servers = twoServersOnOneStore(open, { pollIntervalMs: POLL_INTERVAL_MS, jobs: catalog });

  /**
   * Runs a worker on `workerUrl`, enqueues and cancels jobs through `cancelUrl` after each has run
   * `RUN_BEFORE_CANCEL_MS`, and resolves to how long each cancellation took to abort its handler's signal.
   */
  async function abortDelays(workerUrl: string, cancelUrl: string): Promise<number[]> {
    const consumer = createClient({ url: workerUrl, jobs: catalog });
    const producer = createClient({ url: cancelUrl, jobs: catalog });
    const startedAtMs = new Map<string, number>();
    const abortedAtMs = new Map<string, number>();
    const reasons = new Map<string, unknown>();
    const worker = consumer.consume(
      'render',
      async (job, ctx) => {
        startedAtMs.set(job.id, Date.now());
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        abortedAtMs.set(job.id, Date.now());
        reasons.set(job.id, ctx.signal.reason);
      },
      { concurrency: 2, logger: false },
    );
    servers.workers.push(worker);
    const delays: number[] = [];
    try {
      for (const [page, runMs] of RUN_BEFORE_CANCEL_MS.entries()) {
        const handle = await producer.enqueue.render({ page });
        await until(() => startedAtMs.has(handle.id), 20_000, 5);
        await new Promise((resolve) => setTimeout(resolve, runMs));
        const cancelledAtMs = Date.now();
        expect(await handle.cancel()).toBe(true);
        await until(() => abortedAtMs.has(handle.id), 15_000, 2);
        delays.push(abortedAtMs.get(handle.id)! - cancelledAtMs);
        expect(isWorkqError(reasons.get(handle.id), 'LEASE_LOST')).toBe(true);
        expect(String((reasons.get(handle.id) as Error).message)).toMatch(/was cancelled/);
        expect(await handle.status()).toMatchObject({ state: 'cancelled' });
      }
    } finally {
      await worker.close();
    }
    return delays;
  }

  it('aborts the signal of a job held on the same server soon after it is cancelled, however long it has run', async () => {
    const delays = await abortDelays(servers.a.url, servers.a.url);
    console.log(
      `cancel → abort, same server (${label}), after ${RUN_BEFORE_CANCEL_MS.join(' / ')} ms: ${delays.join(' / ')} ms`,
    );
    // Heard at once (~100 ms): a shared, loaded machine can delay it, never by a lease extension's 10 s.
    for (const delayMs of delays) expect(delayMs).toBeLessThan(1_000);
  });

  it('aborts the signal of a job held through another server soon after it is cancelled', async () => {
    const delays = await abortDelays(servers.b.url, servers.a.url);
    console.log(
      `cancel → abort, across servers (${label}), after ${RUN_BEFORE_CANCEL_MS.join(' / ')} ms: ${delays.join(' / ')} ms`,
    );
    // Over the store's wake-ups (~1 s at most), with room for a loaded machine; far from a 10 s extension round.
    for (const delayMs of delays) expect(delayMs).toBeLessThan(3_000);
  });

  /**
   * Runs a worker on `workerUrl`, enqueues through `cancelUrl` a report whose one child is a render, and once
   * the child runs cancels the report; resolves to how long the child's signal took to abort.
   */
  async function flowAbortDelay(workerUrl: string, cancelUrl: string): Promise<number> {
    const consumer = createClient({ url: workerUrl, jobs: catalog });
    const producer = createClient({ url: cancelUrl, jobs: catalog });
    let started = false;
    let abortedAtMs: number | undefined;
    let reason: unknown;
    const worker = consumer.consume(
      'render',
      async (_job, ctx) => {
        started = true;
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        abortedAtMs = Date.now();
        reason = ctx.signal.reason;
      },
      { logger: false },
    );
    servers.workers.push(worker);
    try {
      const parent = await producer.enqueue.report(
        { reportId: 'r' },
        { children: [producer.child.render({ page: 0 })] },
      );
      await until(() => started, 20_000, 5);
      const cancelledAtMs = Date.now();
      expect(await parent.cancel()).toBe(true);
      await until(() => abortedAtMs !== undefined, 15_000, 2);
      expect(isWorkqError(reason, 'LEASE_LOST')).toBe(true);
      return (abortedAtMs as number) - cancelledAtMs;
    } finally {
      await worker.close();
    }
  }

  it('aborts the signal of a running child cancelled with its flow, on the same server and through another', async () => {
    const same = await flowAbortDelay(servers.a.url, servers.a.url);
    const across = await flowAbortDelay(servers.b.url, servers.a.url);
    console.log(`cancel with flow → abort (${label}): same server ${same} ms, across servers ${across} ms`);
    expect(same).toBeLessThan(1_000);
    expect(across).toBeLessThan(3_000);
  });
});
