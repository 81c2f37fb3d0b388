import { openStore, type Store } from '@workq/core/engine';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { freePort, until } from '@workq/test-support';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { describeEachStore, type FreshStore, listStoredJobs, SHARED_STORES, serverStore } from '../support/stores.ts';

const JOB_COUNT = 200;
const HANDLER_MS = 40;

await describeEachStore(SHARED_STORES, 'a worker across a server restart, over $label', ({ label, open }) => {
  let target: FreshStore | undefined;
  /** The store read directly, not through the servers under test. */
  let store: Store | undefined;
  const servers = new Set<QueueServer>();
  const workers: Worker[] = [];

  const start = async (port: number, pollIntervalMs = 200): Promise<QueueServer> => {
    const server = await startServer({
      store: await serverStore(target!),
      port,
      logger: collectingLogger(),
      pollIntervalMs,
    });
    servers.add(server);
    return server;
  };
  const stop = async (server: QueueServer): Promise<void> => {
    await server.close();
    servers.delete(server);
  };

  beforeAll(async () => {
    target = await open();
    const direct = await serverStore(target);
    store = typeof direct === 'string' ? await openStore(direct) : direct;
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await Promise.all([...servers].map((s) => stop(s)));
  });

  afterAll(async () => {
    await store?.close();
    await target?.drop();
  });

  it('is ready and healthy while up', async () => {
    const server = await start(0);
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true });
  });

  it('keeps working through a restart on the same port and store, completing each job once', async () => {
    const port = await freePort();
    let server = await start(port);
    const url = `http://127.0.0.1:${port}`;
    const sdk = createClient({ url, jobs });
    const handles = await sdk.enqueueMany.imageConvert(
      Array.from({ length: JOB_COUNT }, (_, i) => ({ source: `r/${i}.png`, output: `r/${i}.webp` })),
    );
    const ids = new Set(handles.map((h) => h.id));

    const completions = new Map<string, number>();
    const consumer = createClient({ url, jobs });
    const worker = consumer.consume(
      'imageConvert',
      async (job) => {
        await new Promise((r) => setTimeout(r, HANDLER_MS));
        completions.set(job.id, (completions.get(job.id) ?? 0) + 1);
        return { bytes: 1 };
      },
      { concurrency: 4, pollWaitMs: 5_000 },
    );
    workers.push(worker);

    await until(() => completions.size >= JOB_COUNT / 4, 30_000);
    const closeStartedAt = Date.now();
    await stop(server);
    const closeMs = Date.now() - closeStartedAt;
    const doneBeforeRestart = completions.size;
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 1_000));
    server = await start(port);
    console.info(
      `restart over ${label}: closed in ${closeMs} ms after ${doneBeforeRestart} jobs handled, restarted 1 s later`,
    );

    const stored = async () => (await listStoredJobs(store!, 'imageConvert')).filter((row) => ids.has(row.id));
    await until(async () => (await stored()).every((row) => row.state === 'completed'), 60_000, 100);

    const rows = await stored();
    expect(rows.length).toBe(JOB_COUNT);
    for (const row of rows) {
      const handled = completions.get(row.id) ?? 0;
      expect(handled, `handler runs of ${row.id}`).toBeGreaterThanOrEqual(1);
      expect(handled, `handler runs of ${row.id} within its attempts`).toBeLessThanOrEqual(row.attempts);
    }
    expect(doneBeforeRestart, 'jobs were left for the restarted server').toBeLessThan(JOB_COUNT);
    // The same worker, never restarted, keeps serving the new server.
    const after = await sdk.enqueue.imageConvert({ source: 'after.png', output: 'after.webp' });
    await expect(after.result({ timeoutMs: 10_000 })).resolves.toEqual({ bytes: 1 });
    const retried = rows.filter((row) => row.attempts > 1).length;
    console.info(`restart over ${label}: ${JOB_COUNT} jobs completed once each, ${retried} needed a second attempt`);
  }, 90_000);

  it('returns a waiting long-poll claim at once when the server closes', async () => {
    // A poll interval longer than the test: only the close itself can end the waiting claim.
    const server = await start(0, 60_000);
    const sdk = createClient({ url: server.url, jobs });
    workers.push(sdk.consume('sendEmail', async () => ({ messageId: 'x' }), { pollWaitMs: 25_000 }));
    // The server records the worker when its claim arrives; the claim then waits for work.
    const admin = rawClient(server.url);
    await until(async () => (await admin.admin.stats.query()).consumers.length > 0, 10_000, 50);
    await new Promise((r) => setTimeout(r, 300));
    const startedAt = Date.now();
    await stop(server);
    const closeMs = Date.now() - startedAt;
    console.info(`restart over ${label}: close() with a waiting claim took ${closeMs} ms`);
    expect(closeMs).toBeLessThan(2_000);
    const closing = Date.now();
    await workers.pop()?.close();
    expect(Date.now() - closing).toBeLessThan(2_000);
  });
});
