import { defineCatalog, defineJob, FLOW_LIMITS } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient, type Worker } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient, rawFailure } from '../support/raw-client.ts';
import { describeEachStore, type FreshStore, IN_PROCESS_STORES, serverStore } from '../support/stores.ts';

/** A parent that sums what its children counted. */
const jobs = defineCatalog({
  sumCounts: defineJob({ version: 1, payload: z.object({ run: z.string() }) }),
  countItem: defineJob({
    version: 1,
    payload: z.object({ n: z.number().int() }),
    result: z.object({ n: z.number().int() }),
  }),
});

/** The tRPC paths of the requests a client sent through it, one entry per call of a batched request. */
function recordingFetch(paths: string[]): typeof fetch {
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    paths.push(...new URL(url).pathname.replace(/^.*\/trpc\//, '').split(','));
    return fetch(input, init);
  };
}

/**
 * Far longer than a parent may take to start after its last child: a parent that only a waiting claim's poll
 * finds starts this late.
 */
const POLL_INTERVAL_MS = 10_000;

await describeEachStore(IN_PROCESS_STORES, "a resumed parent's read of its children over $label", ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;

  beforeAll(async () => {
    target = await open();
    server = await startServer({
      store: await serverStore(target),
      port: 0,
      jobs,
      pollIntervalMs: POLL_INTERVAL_MS,
      logger: collectingLogger(),
    });
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  it('answers a page of the held job’s children only under its lease, saying whether more follow', async () => {
    const raw = rawClient(server.url);
    const parent = await raw.jobs.enqueue.mutate({
      name: 'sumCounts',
      version: 1,
      payload: { run: 'lease' },
      children: [0, 1, 2].map((n) => ({ name: 'countItem', version: 1, payload: { n } })),
    });
    const children = await raw.consumer.claim.mutate({ name: 'countItem', maxVersion: 1, limit: 3, workerId: 'raw' });
    await raw.consumer.complete.mutate({
      items: children.jobs.map(({ id, leaseToken, payload }) => ({ id, leaseToken, result: payload })),
    });
    const claim = () => raw.consumer.claim.mutate({ name: 'sumCounts', maxVersion: 1, limit: 1, workerId: 'raw' });
    let held = await claim();
    await until(async () => {
      if (held.jobs.length === 0) held = await claim();
      return held.jobs.length > 0;
    });
    const { id, leaseToken } = held.jobs[0] as { id: string; leaseToken: string };
    expect(id).toBe(parent.id);

    const first = await raw.consumer.children.query({ id, leaseToken, limit: 2 });
    expect(first.more).toBe(true);
    expect(first.children.map((child) => [child.state, child.result])).toEqual([
      ['completed', { n: 0 }],
      ['completed', { n: 1 }],
    ]);
    const rest = await raw.consumer.children.query({ id, leaseToken, afterId: first.children[1]?.id, limit: 2 });
    expect(rest).toMatchObject({ more: false, children: [{ state: 'completed', result: { n: 2 } }] });

    const stale = await rawFailure(raw.consumer.children.query({ id, leaseToken: `${leaseToken}x` }));
    expect(stale.code).toBe('LEASE_LOST');
    await raw.consumer.complete.mutate({ items: [{ id, leaseToken, result: null }] });
    expect((await rawFailure(raw.consumer.children.query({ id, leaseToken }))).code).toBe('LEASE_LOST');
  });

  it("starts a parent's handler once its last child completes, its children coming with its claim", async () => {
    const paths: string[] = [];
    const sdk = createClient({ url: server.url, jobs, logger: false, fetch: recordingFetch(paths) });
    const seen: { n: number }[][] = [];
    let lastChildAt = 0;
    let parentAt = 0;
    // The parent's claim waits on the server from before its flow exists: only its children's ends can wake it.
    const parents = sdk.consume('sumCounts', async (_job, ctx) => {
      parentAt = performance.now();
      seen.push(await ctx.childResults('countItem'));
    });
    await until(() => paths.includes('consumer.claim'));
    await sdk.enqueue.sumCounts({ run: 'prompt' }, { children: [0, 1, 2].map((n) => sdk.child.countItem({ n })) });
    const children = sdk.consume(
      'countItem',
      (job) => {
        lastChildAt = performance.now();
        return { n: job.payload.n };
      },
      { concurrency: 3 },
    );
    await until(() => seen.length > 0, POLL_INTERVAL_MS / 2);
    expect(seen).toEqual([[{ n: 0 }, { n: 1 }, { n: 2 }]]);
    expect(parentAt - lastChildAt).toBeLessThan(POLL_INTERVAL_MS / 4);
    expect(paths).not.toContain('consumer.children');
    await Promise.all([parents.close(), children.close()]);
    await sdk.close();
  }, 30_000);
});

describe("a resumed parent's read of a full page of children over pglite", () => {
  let server: QueueServer;
  const workers: Worker[] = [];

  beforeAll(async () => {
    server = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger() });
  });

  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await server?.close();
  });

  it('hands the handler its first page of children with its claim, and reads the next in one request', async () => {
    const paths: string[] = [];
    const sdk = createClient({ url: server.url, jobs, logger: false, fetch: recordingFetch(paths) });
    const count = FLOW_LIMITS.statusChildren + 1;
    const seen: { children: number; results: number }[] = [];
    await sdk.enqueue.sumCounts(
      { run: 'page' },
      { children: Array.from({ length: count }, (_, n) => sdk.child.countItem({ n })) },
    );
    workers.push(sdk.consume('countItem', (job) => ({ n: job.payload.n }), { concurrency: 20 }));
    workers.push(
      sdk.consume('sumCounts', async (_job, ctx) => {
        const results = await ctx.childResults('countItem');
        seen.push({ children: ctx.children.length, results: results.length });
      }),
    );
    await until(() => seen.length > 0, 60_000);
    expect(seen).toEqual([{ children: count, results: count }]);
    expect(paths.filter((path) => path.includes('children'))).toEqual(['consumer.children']);
    await sdk.close();
  }, 90_000);

  it('shares one page of children among the resumed jobs of a claim, each page saying whether more follow', async () => {
    const raw = rawClient(server.url);
    const size = FLOW_LIMITS.statusChildren / 2 + 1;
    for (const run of ['a', 'b']) {
      await raw.jobs.enqueue.mutate({
        name: 'sumCounts',
        version: 1,
        payload: { run },
        children: Array.from({ length: size }, (_, n) => ({ name: 'countItem', version: 1, payload: { n } })),
      });
    }
    for (;;) {
      const { jobs } = await raw.consumer.claim.mutate({
        name: 'countItem',
        maxVersion: 1,
        limit: 500,
        workerId: 'raw',
      });
      if (jobs.length === 0) break;
      await raw.consumer.complete.mutate({
        items: jobs.map(({ id, leaseToken, payload }) => ({ id, leaseToken, result: payload })),
      });
    }
    const parents = await raw.consumer.claim.mutate({ name: 'sumCounts', maxVersion: 1, limit: 2, workerId: 'raw' });
    expect(parents.jobs).toHaveLength(2);
    for (const { id, leaseToken, children } of parents.jobs) {
      expect(children?.more).toBe(true);
      expect(children?.children.map((child) => child.result)).toEqual(
        Array.from({ length: FLOW_LIMITS.statusChildren / 2 }, (_, n) => ({ n })),
      );
      const afterId = children?.children.at(-1)?.id;
      const rest = await raw.consumer.children.query({ id, leaseToken, afterId });
      expect(rest).toMatchObject({ more: false, children: [{ result: { n: size - 1 } }] });
    }
  }, 90_000);
});
