import { setTimeout as sleep } from 'node:timers/promises';
import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient, PermanentError } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import { failure } from '../support/raw-client.ts';

/** A parent with two kinds of child: `page` has a worker in the tests that use one, `archive` never does. */
const jobs = defineCatalog({
  report: defineJob({ version: 1, payload: z.object({ reportId: z.string() }) }),
  page: defineJob({ version: 1, payload: z.object({ page: z.number().int() }), defaults: { maxAttempts: 1 } }),
  archive: defineJob({ version: 1, payload: z.object({}) }),
});

/**
 * Far longer than any answer here may take: a result wait that the end of a flow does not wake answers only
 * when this runs out.
 */
const POLL_INTERVAL_MS = 10_000;
/** How soon a waiting result must answer once its job ended, on a server that ended it. */
const PROMPT_MS = 1_500;
/** Long enough for a result request to be waiting on the server before the flow ends. */
const WAITING_MS = 300;

/** How long `call` takes to settle from now, and the error it rejects with. */
async function settles(call: Promise<unknown>, startedAtMs: number) {
  const error = await failure(call);
  return { error, elapsedMs: performance.now() - startedAtMs };
}

describe('result waits on jobs a flow ends, on one server over pglite', () => {
  let server: QueueServer;
  let sdk: ReturnType<typeof createClient<typeof jobs>>;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      pollIntervalMs: POLL_INTERVAL_MS,
      logger: collectingLogger(),
    });
    sdk = createClient({ url: server.url, jobs, logger: false });
  });

  afterAll(async () => {
    await sdk?.close();
    await server?.close();
  });

  it('answers at once for a child cancelled with its parent, and for the child below it', async () => {
    const parent = await sdk.enqueue.report(
      { reportId: 'cancelled' },
      { children: [sdk.child.archive({}, { children: [sdk.child.page({ page: 1 })] })] },
    );
    const child = (await parent.status()).children?.[0]?.id as string;
    const grandchild = (await sdk.job('archive', child).status()).children?.[0]?.id as string;
    const childResult = sdk.job('archive', child).result({ timeoutMs: 3 * POLL_INTERVAL_MS });
    const grandchildResult = sdk.job('page', grandchild).result({ timeoutMs: 3 * POLL_INTERVAL_MS });
    await sleep(WAITING_MS);

    const cancelledAtMs = performance.now();
    expect(await parent.cancel()).toBe(true);
    const ends = await Promise.all([settles(childResult, cancelledAtMs), settles(grandchildResult, cancelledAtMs)]);
    for (const { error, elapsedMs } of ends) {
      expect(error.code).toBe('CONFLICT');
      expect(error.details).toMatchObject({ state: 'cancelled', error: { code: 'FLOW_CANCELLED' } });
      expect(elapsedMs).toBeLessThan(PROMPT_MS);
    }
  });

  it('answers at once for a parent made dead by its failing child, and for the sibling cancelled with it', async () => {
    const parent = await sdk.enqueue.report(
      { reportId: 'failed' },
      { children: [sdk.child.page({ page: 1 }), sdk.child.archive({})] },
    );
    const sibling = (await parent.status()).children?.[1]?.id as string;
    const parentResult = parent.result({ timeoutMs: 3 * POLL_INTERVAL_MS });
    const siblingResult = sdk.job('archive', sibling).result({ timeoutMs: 3 * POLL_INTERVAL_MS });
    await sleep(WAITING_MS);

    let failedAtMs = Number.NaN;
    const worker = sdk.consume('page', async () => {
      failedAtMs = performance.now();
      throw new PermanentError('page 1 cannot be rendered');
    });
    try {
      const [dead, cancelled] = await Promise.all([parentResult, siblingResult].map((call) => failure(call)));
      const elapsedMs = performance.now() - failedAtMs;
      expect(dead?.code).toBe('JOB_FAILED');
      expect(dead?.details).toMatchObject({ state: 'dead', error: { code: 'CHILD_FAILED' } });
      expect(cancelled?.code).toBe('CONFLICT');
      expect(cancelled?.details).toMatchObject({ state: 'cancelled', error: { code: 'FLOW_CANCELLED' } });
      expect(elapsedMs).toBeLessThan(PROMPT_MS);
    } finally {
      await worker.close();
    }
  });
});
