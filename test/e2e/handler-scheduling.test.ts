import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient, type Handler, isWorkqError } from '@workq/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';

const catalog = defineCatalog({
  /** Its first run delays itself (by `ms`, or until `untilMs` from now); the next completes. */
  delaysOnce: defineJob({
    version: 1,
    payload: z.object({ key: z.string(), ms: z.number().optional(), untilMs: z.number().optional() }),
    result: z.object({ attempt: z.number() }),
    defaults: { maxAttempts: 1, leaseMs: 10_000 },
  }),
  /** Calls an upstream that answers 429 to its first call. */
  callsUpstream: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    defaults: { maxAttempts: 1, leaseMs: 10_000 },
  }),
  /** Another type, which a hold of `callsUpstream` leaves alone. */
  otherWork: defineJob({ version: 1, payload: z.object({ n: z.number() }) }),
  /** Tries the bad arguments, then completes. */
  triesBadArguments: defineJob({ version: 1, payload: z.object({}), result: z.array(z.string()) }),
});

let server: QueueServer;

beforeAll(async () => {
  server = await startServer({ store: 'pglite://memory', port: 0, jobs: catalog, logger: collectingLogger() });
});

afterAll(async () => {
  await server?.close();
});

it.each([
  ['ctx.delay', { ms: 300 }],
  ['ctx.retryAt', { untilMs: 300 }],
])(
  'a handler that returns %s once runs again after it, and the job completes with one attempt used',
  async (how, when) => {
    const sdk = createClient({ url: server.url, jobs: catalog });
    const runs: { attempt: number; atMs: number }[] = [];
    const worker = sdk.consume(
      'delaysOnce',
      async (job, ctx) => {
        runs.push({ attempt: job.attempt, atMs: Date.now() });
        if (runs.length > 1) return { attempt: job.attempt };
        if (job.payload.ms !== undefined) return ctx.delay(job.payload.ms);
        return ctx.retryAt(new Date(Date.now() + (job.payload.untilMs ?? 0)));
      },
      { concurrency: 2, logger: false },
    );
    try {
      const handle = await sdk.enqueue.delaysOnce({ key: how, ...when });
      expect(await handle.result({ timeoutMs: 20_000 })).toEqual({ attempt: 1 });
      expect(runs.map((run) => run.attempt)).toEqual([1, 1]);
      expect((runs[1]?.atMs ?? 0) - (runs[0]?.atMs ?? 0)).toBeGreaterThanOrEqual(300);
      const status = await handle.status();
      expect(status).toMatchObject({ state: 'completed', attempts: 1, maxAttempts: 1 });
      expect(status.error).toBeUndefined();
    } finally {
      await worker.close();
    }
  },
);

it('a handler that says rateLimited holds its type on every worker until the hold ends; another type keeps running', async () => {
  const sdk = createClient({ url: server.url, jobs: catalog });
  // Long enough that the other type's two jobs end within it on a loaded machine too.
  const HOLD_MS = 2_000;
  let heldAtMs = 0;
  const starts: { n: number; atMs: number }[] = [];
  const handler: Handler<typeof catalog, 'callsUpstream'> = async (job, ctx) => {
    starts.push({ n: job.payload.n, atMs: Date.now() });
    if (heldAtMs === 0) {
      heldAtMs = Date.now();
      return ctx.rateLimited(HOLD_MS);
    }
  };
  const workers = [
    sdk.consume('callsUpstream', handler, { concurrency: 2, logger: false }),
    sdk.consume('callsUpstream', handler, { concurrency: 2, logger: false }),
  ];
  const otherDone: number[] = [];
  const other = sdk.consume('otherWork', () => void otherDone.push(Date.now()), { logger: false });
  try {
    const first = await sdk.enqueue.callsUpstream({ n: 0 });
    while (heldAtMs === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const rest = await sdk.enqueueMany.callsUpstream([{ n: 1 }, { n: 2 }, { n: 3 }]);
    const others = await sdk.enqueueMany.otherWork([{ n: 1 }, { n: 2 }]);
    for (const handle of others) await handle.result({ timeoutMs: 10_000 });
    for (const handle of [first, ...rest]) await handle.result({ timeoutMs: 20_000 });

    expect(otherDone).toHaveLength(2);
    expect(Math.max(...otherDone)).toBeLessThan(heldAtMs + HOLD_MS);
    const afterHold = starts.slice(1);
    expect(afterHold.map((start) => start.n).sort()).toEqual([0, 1, 2, 3]);
    for (const start of afterHold) expect(start.atMs).toBeGreaterThanOrEqual(heldAtMs + HOLD_MS);
    // The rate-limited attempt was not counted: the job had one attempt, and completed with it.
    expect(await first.status()).toMatchObject({ state: 'completed', attempts: 1 });
  } finally {
    await Promise.all([...workers, other].map((worker) => worker.close()));
  }
});

it('refuses a delay, a date or a hold out of bounds with VALIDATION, and the job goes on', async () => {
  const sdk = createClient({ url: server.url, jobs: catalog });
  const worker = sdk.consume(
    'triesBadArguments',
    async (_job, ctx) => {
      const codes: string[] = [];
      const tries = [
        () => ctx.delay(-1),
        () => ctx.delay(Number.NaN),
        () => ctx.delay(2 * 365 * 86_400_000),
        () => ctx.retryAt(new Date('not a date')),
        () => ctx.rateLimited(0),
        () => ctx.rateLimited(2 * 86_400_000),
      ];
      for (const attempt of tries) {
        await attempt().then(
          () => codes.push('accepted'),
          (error: unknown) => codes.push(isWorkqError(error) ? error.code : String(error)),
        );
      }
      return codes;
    },
    { logger: false },
  );
  try {
    const handle = await sdk.enqueue.triesBadArguments({});
    expect(await handle.result({ timeoutMs: 10_000 })).toEqual(Array(6).fill('VALIDATION'));
    expect(await handle.status()).toMatchObject({ state: 'completed', attempts: 1 });
  } finally {
    await worker.close();
  }
});
