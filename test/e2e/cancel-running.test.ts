import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient, isWorkqError } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';

/** A lease extended every 10 s: a cancellation heard only at the next extension would take that long. */
const LEASE_MS = 30_000;

const catalog = defineCatalog({
  render: defineJob({
    version: 1,
    payload: z.object({ page: z.number() }),
    defaults: { leaseMs: LEASE_MS, maxAttempts: 1 },
  }),
});

let server: QueueServer;

beforeAll(async () => {
  server = await startServer({ store: 'pglite://memory', port: 0, jobs: catalog, logger: collectingLogger() });
});

afterAll(async () => {
  await server?.close();
});

it('aborts the signal of a running job soon after it is cancelled, long before its lease is next extended', async () => {
  const sdk = createClient({ url: server.url, jobs: catalog });
  const started: string[] = [];
  const abortedAtMs = new Map<string, number>();
  const reasons = new Map<string, unknown>();
  const worker = sdk.consume(
    'render',
    async (job, ctx) => {
      started.push(job.id);
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      abortedAtMs.set(job.id, Date.now());
      reasons.set(job.id, ctx.signal.reason);
    },
    { concurrency: 2, logger: false },
  );
  try {
    const first = await sdk.enqueue.render({ page: 1 });
    const second = await sdk.enqueue.render({ page: 2 });
    await until(() => started.length === 2, 20_000, 10);
    // A job held a second is watched: the cancellation then finds its extension waiting.
    await new Promise((resolve) => setTimeout(resolve, 1_300));

    for (const handle of [first, second]) {
      const cancelledAtMs = Date.now();
      expect(await handle.cancel()).toBe(true);
      await until(() => abortedAtMs.has(handle.id), 5_000, 5);
      // Heard at once: a shared, loaded machine can delay it, never by a lease extension's 10 s.
      expect(abortedAtMs.get(handle.id)! - cancelledAtMs).toBeLessThan(1_000);
      expect(isWorkqError(reasons.get(handle.id), 'LEASE_LOST')).toBe(true);
      expect(String((reasons.get(handle.id) as Error).message)).toMatch(/was cancelled/);
      expect(await handle.status()).toMatchObject({ state: 'cancelled' });
    }
  } finally {
    await worker.close();
  }
});
