import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient, isWorkqError } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';

const TIME_LIMIT_MS = 400;

const catalog = defineCatalog({
  /** Its first attempt hangs, ignoring its signal; the next one finishes at once. */
  hangsOnce: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    result: z.object({ attempt: z.number() }),
    timeoutMs: TIME_LIMIT_MS,
    defaults: { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 }, leaseMs: 10_000 },
  }),
  /** Waits for its signal and gives up when it aborts. */
  givesUp: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    timeoutMs: TIME_LIMIT_MS,
    defaults: { maxAttempts: 1, leaseMs: 10_000 },
  }),
});

let server: QueueServer;

beforeAll(async () => {
  server = await startServer({ store: 'pglite://memory', port: 0, jobs: catalog, logger: collectingLogger() });
});

afterAll(async () => {
  await server?.close();
});

it('fails an attempt that runs past the type timeoutMs with TIMEOUT and retries it, while the hung handler runs on', async () => {
  const sdk = createClient({ url: server.url, jobs: catalog });
  let releaseHung: () => void = () => undefined;
  const hung = new Promise<void>((resolve) => {
    releaseHung = resolve;
  });
  const signals: AbortSignal[] = [];
  const worker = sdk.consume(
    'hangsOnce',
    async (job, ctx) => {
      signals.push(ctx.signal);
      if (job.attempt === 1) await hung;
      return { attempt: job.attempt };
    },
    { concurrency: 1, logger: false },
  );
  try {
    const startedAt = Date.now();
    const handle = await sdk.enqueue.hangsOnce({ n: 1 });
    // One slot: the retry runs while the first handler still hangs, so the time limit freed the slot.
    expect(await handle.result({ timeoutMs: 20_000 })).toEqual({ attempt: 2 });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(TIME_LIMIT_MS);
    const status = await handle.status();
    expect(status).toMatchObject({ state: 'completed', attempts: 2 });
    expect(status.errors).toHaveLength(1);
    expect(status.errors?.[0]).toMatchObject({ attempt: 1, code: 'TIMEOUT' });
    expect(status.errors?.[0]?.message).toMatch(/ran past its time limit of 400 ms \(timeoutMs\)/);
    expect(signals[0]?.aborted).toBe(true);
    expect(isWorkqError(signals[0]?.reason, 'TIMEOUT')).toBe(true);
    expect(signals[1]?.aborted).toBe(false);
  } finally {
    releaseHung();
    await worker.close();
  }
});

it('aborts the signal of a handler at the limit; one that honours it ends the attempt with TIMEOUT, not its own error', async () => {
  const sdk = createClient({ url: server.url, jobs: catalog });
  let abortedAtMs: number | undefined;
  const worker = sdk.consume(
    'givesUp',
    async (_job, ctx) => {
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      abortedAtMs = Date.now();
      throw new Error('gave up');
    },
    { logger: false },
  );
  try {
    // The limit counts from the lease, which comes after the enqueue.
    const enqueuedAtMs = Date.now();
    const handle = await sdk.enqueue.givesUp({ n: 1 });
    await until(async () => (await handle.status()).state === 'dead', 20_000, 20);
    const status = await handle.status();
    expect(status).toMatchObject({ state: 'dead', attempts: 1, error: { code: 'TIMEOUT', attempt: 1 } });
    expect(abortedAtMs! - enqueuedAtMs).toBeGreaterThanOrEqual(TIME_LIMIT_MS - 20);
    const failed = await handle.result({ timeoutMs: 1_000 }).catch((error: unknown) => error);
    expect(isWorkqError(failed, 'JOB_FAILED')).toBe(true);
  } finally {
    await worker.close();
  }
});
