import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import { type RawClient, rawClient } from '../support/raw-client.ts';

/** A parent that reads what its children returned: results of about `RESULT_CHARS` bytes each. */
const jobs = defineCatalog({
  gather: defineJob({ version: 1, payload: z.object({ run: z.string() }) }),
  piece: defineJob({
    version: 1,
    payload: z.object({ n: z.number().int() }),
    result: z.object({ n: z.number().int(), text: z.string() }),
  }),
});

const RESULT_CHARS = 10_000;
const MAX_PAGE_BYTES = 32 * 1024;
const CHILDREN = 12;
const resultOf = (n: number) => ({ n, text: 'r'.repeat(RESULT_CHARS) });

/**
 * A page of children carries their results, each up to `maxResultBytes`: the server ends a page where their
 * bytes reach `limits.maxChildrenPageBytes`, in the claim that resumes a parent, in `consumer.children` and in
 * `jobs.children`, so a page of a thousand large results never lands in one answer.
 */
describe('pages of children cut to limits.maxChildrenPageBytes', () => {
  let server: QueueServer;
  let raw: RawClient;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs,
      logger: collectingLogger(),
      limits: { maxPayloadBytes: 16 * 1024, maxResultBytes: 16 * 1024, maxChildrenPageBytes: MAX_PAGE_BYTES },
    });
    raw = rawClient(server.url);
  });

  afterAll(async () => {
    await server?.close();
  });

  /** A parent of `CHILDREN` children, each completed with `resultOf` its `n`. */
  async function flowWithLargeResults(run: string): Promise<string> {
    const children = Array.from({ length: CHILDREN }, (_, n) => ({ name: 'piece', version: 1, payload: { n } }));
    const parent = await raw.jobs.enqueue.mutate({ name: 'gather', version: 1, payload: { run }, children });
    for (;;) {
      const claim = await raw.consumer.claim.mutate({ name: 'piece', maxVersion: 1, limit: 50, workerId: 'raw' });
      if (claim.jobs.length === 0) return parent.id;
      const items = claim.jobs.map(({ id, leaseToken, payload }) => ({
        id,
        leaseToken,
        result: resultOf((payload as { n: number }).n),
      }));
      await raw.consumer.complete.mutate({ items });
    }
  }

  const numbers = (children: readonly { result?: unknown }[]) =>
    children.map((child) => (child.result as { n: number }).n);

  it('carries the first page with the resuming claim and answers the rest page by page, each within the bytes', async () => {
    const parentId = await flowWithLargeResults('raw');
    const claim = () => raw.consumer.claim.mutate({ name: 'gather', maxVersion: 1, limit: 1, workerId: 'raw' });
    let held = await claim();
    await until(async () => {
      if (held.jobs.length === 0) held = await claim();
      return held.jobs.length > 0;
    });
    type Child = { id: string; result?: unknown };
    const job = held.jobs[0] as { id: string; leaseToken: string; children?: { children: Child[]; more: boolean } };
    expect(job.id).toBe(parentId);
    // 32 KiB of results of about 10 KB: the fourth child reaches them.
    const first = job.children ?? { children: [], more: false };
    expect(numbers(first.children)).toEqual([0, 1, 2, 3]);
    expect(first.more).toBe(true);

    const seen = numbers(first.children);
    let lastId = first.children.at(-1)?.id;
    for (let more = true; more; ) {
      const page = await raw.consumer.children.query({ id: job.id, leaseToken: job.leaseToken, afterId: lastId });
      expect(page.children.length).toBeLessThanOrEqual(4);
      expect(JSON.stringify(page).length).toBeLessThan(MAX_PAGE_BYTES + RESULT_CHARS + 1_024);
      seen.push(...numbers(page.children));
      lastId = page.children.at(-1)?.id ?? lastId;
      more = page.more;
    }
    expect(seen).toEqual(Array.from({ length: CHILDREN }, (_, n) => n));
    await raw.consumer.complete.mutate({ items: [{ id: job.id, leaseToken: job.leaseToken, result: null }] });

    // jobs.children pages alike (its pages count payloads too), and the page after the last is empty.
    const listed: number[] = [];
    let afterId: string | undefined;
    for (;;) {
      const page = await raw.jobs.children.query({ id: parentId, ...(afterId ? { afterId } : {}) });
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(4);
      listed.push(...numbers(page));
      afterId = page.at(-1)?.id;
    }
    expect(listed).toEqual(Array.from({ length: CHILDREN }, (_, n) => n));
  });

  it("hands a parent's handler every child's result, the SDK reading the pages after its claim's", async () => {
    const sdk = createClient({ url: server.url, jobs, logger: false });
    const seen: number[][] = [];
    const parents = sdk.consume('gather', async (_job, ctx) => {
      seen.push((await ctx.childResults('piece')).map((result) => result.n));
    });
    const children = sdk.consume('piece', (job) => resultOf(job.payload.n), { concurrency: CHILDREN });
    try {
      await sdk.enqueue.gather(
        { run: 'sdk' },
        { children: Array.from({ length: CHILDREN }, (_, n) => sdk.child.piece({ n })) },
      );
      await until(() => seen.length > 0, 20_000);
      expect(seen).toEqual([Array.from({ length: CHILDREN }, (_, n) => n)]);
    } finally {
      await Promise.all([parents.close(), children.close()]);
      await sdk.close();
    }
  }, 30_000);

  it('refuses a maxChildrenPageBytes that is not a positive integer, at start', async () => {
    for (const maxChildrenPageBytes of [0, 1.5, Number.NaN]) {
      await expect(
        startServer({
          store: 'pglite://memory',
          port: 0,
          jobs,
          logger: collectingLogger(),
          limits: { maxChildrenPageBytes },
        }),
      ).rejects.toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('limits.maxChildrenPageBytes') });
    }
  });
});
