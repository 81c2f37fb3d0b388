import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs as catalogV2 } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { describeEachStore, type FreshStore, SHARED_STORES, serverStore } from '../support/stores.ts';

/** The catalog services deployed before imageConvert v2: the same v1 payload schema the v2 catalog keeps in `previous`. */
const catalogV1 = defineCatalog({
  imageConvert: defineJob({
    version: 1,
    payload: z.object({ source: z.string().min(1), output: z.string().min(1) }),
    result: z.object({ bytes: z.number().int().nonnegative(), width: z.number().int().optional() }),
  }),
});

/** A catalog that changed v2's payload without bumping the version. */
const conflicting = defineCatalog({
  imageConvert: defineJob({
    version: 2,
    payload: z.object({ source: z.string(), output: z.string(), quality: z.string() }),
    previous: {
      1: {
        payload: z.object({ source: z.string().min(1), output: z.string().min(1) }),
        upgrade: (p) => ({ ...p, quality: 'high' }),
      },
    },
  }),
});

/** A job type no other test registers, to see when `ready()` registers it. */
const probeCatalog = defineCatalog({
  readyProbe: defineJob({ version: 3, payload: z.object({ n: z.number() }) }),
});

await describeEachStore(SHARED_STORES, 'rolling deploy of imageConvert v1 → v2 over $label', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;
  const workers: Worker[] = [];
  const admin = () => createClient({ url: server.url, jobs: catalogV2, token: 'root-token-0123456789' });

  beforeAll(async () => {
    target = await open();
    server = await startServer({
      store: await serverStore(target),
      port: 0,
      pollIntervalMs: 200,
      logger: collectingLogger(),
      tokens: [{ token: 'root-token-0123456789', scopes: ['admin'] }],
    });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
  });
  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  it('(a) old producers keep sending v1 while new consumers run v2: every job completes upgraded', async () => {
    const oldProducer = createClient({ url: server.url, jobs: catalogV1, token: 'root-token-0123456789' });
    const newConsumer = createClient({ url: server.url, jobs: catalogV2, token: 'root-token-0123456789' });
    const seen = new Map<string, { version: number; payload: unknown }>();
    workers.push(
      newConsumer.consume(
        'imageConvert',
        async (job) => {
          seen.set(job.id, { version: job.version, payload: job.payload });
          return { bytes: job.payload.quality };
        },
        { concurrency: 4 },
      ),
    );
    const handles = await oldProducer.enqueueMany.imageConvert(
      Array.from({ length: 20 }, (_, i) => ({ source: `old-${i}.png`, output: `old-${i}.webp` })),
    );
    const results = await Promise.all(handles.map((h) => h.result({ timeoutMs: 20_000 })));
    expect(results).toEqual(handles.map(() => ({ bytes: 80 })));
    expect(seen.size).toBe(20);
    for (const [, job] of seen) {
      expect(job.version).toBe(1);
      expect(job.payload).toMatchObject({ format: 'webp', quality: 80 });
    }
  });

  it('(b) new producers send v2 while only v1 consumers run: v2 jobs wait, then a v2 consumer drains them', async () => {
    const newProducer = createClient({ url: server.url, jobs: catalogV2, token: 'root-token-0123456789' });
    const oldConsumer = createClient({ url: server.url, jobs: catalogV1, token: 'root-token-0123456789' });
    const oldSaw: number[] = [];
    workers.push(
      oldConsumer.consume(
        'imageConvert',
        async (job) => {
          oldSaw.push(job.version);
          return { bytes: 1 };
        },
        { pollWaitMs: 500 },
      ),
    );
    const handles = await newProducer.enqueueMany.imageConvert(
      Array.from({ length: 10 }, (_, i) => ({
        source: `new-${i}.png`,
        output: `new-${i}.avif`,
        format: 'avif' as const,
      })),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const handle of handles) {
      expect(await handle.status()).toMatchObject({ state: 'ready', attempts: 0, version: 2 });
    }
    expect(oldSaw).toEqual([]);
    const stats = await admin().admin.stats();
    expect(stats.counts).toContainEqual({ name: 'imageConvert', version: 2, state: 'ready', count: 10 });
    expect(stats.consumers).toContainEqual(expect.objectContaining({ name: 'imageConvert', maxVersion: 1 }));

    const newConsumer = createClient({ url: server.url, jobs: catalogV2, token: 'root-token-0123456789' });
    workers.push(
      newConsumer.consume('imageConvert', async (job) => ({ bytes: job.payload.format.length }), { concurrency: 4 }),
    );
    const results = await Promise.all(handles.map((h) => h.result({ timeoutMs: 20_000 })));
    expect(results).toEqual(handles.map(() => ({ bytes: 4 })));
    expect(oldSaw).toEqual([]);
  });

  it('ready() registers the catalog before any job is sent; the first job then takes one request', async () => {
    const raw = rawClient(server.url, 'root-token-0123456789');
    let requests = 0;
    const counting = ((input: RequestInfo | URL, init?: RequestInit) => {
      requests++;
      return fetch(input, init);
    }) as typeof fetch;
    const client = createClient({
      url: server.url,
      jobs: probeCatalog,
      token: 'root-token-0123456789',
      fetch: counting,
    });
    expect(await raw.schemas.list.query({ name: 'readyProbe' })).toEqual([]);
    await client.ready();
    expect(await raw.schemas.list.query({ name: 'readyProbe' })).toEqual([
      expect.objectContaining({ name: 'readyProbe', version: 3 }),
    ]);
    await client.ready();
    expect(requests).toBe(1);
    await client.enqueue.readyProbe({ n: 1 });
    expect(requests).toBe(2);
  });

  it('(c) registering a different schema under an existing version is refused with CONFLICT', async () => {
    const wrong = createClient({ url: server.url, jobs: conflicting, token: 'root-token-0123456789' });
    // At start-up, before any job is sent: ready() fails fast with the same error.
    await expect(wrong.ready()).rejects.toMatchObject({ code: 'CONFLICT' });
    const failure = await wrong.enqueue
      .imageConvert({ source: 'a', output: 'b', quality: 'high' })
      .catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'CONFLICT' });
    const message = (failure as Error).message;
    expect(message).toContain('"imageConvert" version 2');
    expect(message).toContain('quality');
  });
});
