import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';

/**
 * A time limit the server enforces: a worker that does not give up at `timeoutMs` (here one on the plain HTTP
 * API that knows nothing of it) loses its lease at the attempt's deadline, the attempt fails with `TIMEOUT` and
 * is retried, and its late result is refused. The SDK sends the type's `defineJob({ timeoutMs })` with each job.
 */
const TIME_LIMIT_MS = 600;

const catalog = defineCatalog({
  stuck: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    timeoutMs: TIME_LIMIT_MS,
    defaults: { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 }, leaseMs: 10_000 },
  }),
  quick: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    result: z.object({ n: z.number() }),
    timeoutMs: 300,
    defaults: { maxAttempts: 1 },
  }),
});

let server: QueueServer;

beforeAll(async () => {
  server = await startServer({ store: 'pglite://memory', port: 0, jobs: catalog, logger: collectingLogger() });
});

afterAll(async () => {
  await server?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: each answer's shape is what the assertions check.
async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

it('a worker that runs past the type timeoutMs loses its lease at the deadline: TIMEOUT, retried, its late result refused', async () => {
  const sdk = createClient({ url: server.url, jobs: catalog });
  const handle = await sdk.enqueue.stuck({ n: 1 });
  const claimBody = { workerId: 'ignores-limits', maxVersion: 1, limit: 1, waitMs: 0 };
  const claimedAtMs = Date.now();
  const claimed = await post('/v1/jobs/stuck/claim', claimBody);
  const [job] = claimed.body.jobs;
  expect(job).toMatchObject({ id: handle.id, attempt: 1, leaseMs: 10_000, timeoutMs: TIME_LIMIT_MS });
  // The type's limit reached the server with the job: the first lease stops at the deadline, not after 10 s.
  const deadlineMs = Date.parse(job.leaseExpiresAt);
  expect(deadlineMs).toBeLessThanOrEqual(Date.now() + TIME_LIMIT_MS);
  expect(deadlineMs).toBeGreaterThanOrEqual(claimedAtMs + TIME_LIMIT_MS - 50);

  // The worker keeps extending, as a live worker does; the lease still ends at the deadline.
  const extended = await post(`/v1/job/${handle.id}/extend`, { leaseToken: job.leaseToken, leaseMs: 60_000 });
  expect(extended.status).toBe(200);
  // The answer is the lease the store kept, so the worker knows it ends at the deadline.
  expect(extended.body).toEqual({ leaseExpiresAt: job.leaseExpiresAt });
  expect((await handle.status()).leaseExpiresAt?.getTime()).toBe(deadlineMs);

  await until(async () => (await handle.status()).error?.code === 'TIMEOUT', 10_000, 25);
  const status = await handle.status();
  expect(status).toMatchObject({ attempts: 1, error: { code: 'TIMEOUT', attempt: 1 } });
  expect(['scheduled', 'ready']).toContain(status.state);

  const late = await post(`/v1/job/${handle.id}/complete`, { leaseToken: job.leaseToken, result: {} });
  expect(late.status).toBe(409);
  expect(late.body.error.code).toBe('LEASE_LOST');

  await until(async () => (await handle.status()).state === 'ready', 5_000, 10);
  const retried = await post('/v1/jobs/stuck/claim', claimBody);
  const [again] = retried.body.jobs;
  expect(again).toMatchObject({ id: handle.id, attempt: 2 });
  const completed = await post(`/v1/job/${handle.id}/complete`, { leaseToken: again.leaseToken, result: {} });
  expect(completed.status).toBe(200);
  expect(await handle.status()).toMatchObject({ state: 'completed', attempts: 2 });
});

it("a job's own timeoutMs beats its type's, in the worker and on the server", async () => {
  const sdk = createClient({ url: server.url, jobs: catalog });
  const worker = sdk.consume(
    'quick',
    async (job) => {
      await new Promise((resolve) => setTimeout(resolve, 800));
      return { n: job.payload.n };
    },
    { logger: false },
  );
  try {
    const handle = await sdk.enqueue.quick({ n: 7 }, { timeoutMs: 5_000 });
    expect(await handle.result({ timeoutMs: 10_000 })).toEqual({ n: 7 });
    expect(await handle.status()).toMatchObject({ state: 'completed', attempts: 1 });
  } finally {
    await worker.close();
  }
});
