import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { describeEachStore, type FreshStore, IN_PROCESS_STORES, serverStore } from '../support/stores.ts';

/** The worker registry's window here: a handler runs for several of them. */
const PRESENCE_WINDOW_MS = 1_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

await describeEachStore(IN_PROCESS_STORES, 'the worker registry on the $label store', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer | undefined;
  const workers: Worker[] = [];

  beforeAll(async () => {
    target = await open();
    server = await startServer({
      store: await serverStore(target),
      port: 0,
      pollIntervalMs: 100,
      presenceWindowMs: PRESENCE_WINDOW_MS,
      logger: collectingLogger(),
    });
  });

  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.close()));
    await server?.close();
    await target?.drop();
  });

  it('lists a worker busy for longer than the presence window, with its held job, pid and host', async () => {
    const sdk = createClient({ url: server!.url, jobs });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const started: string[] = [];
    const before = new Date();
    const busy = sdk.consume(
      'imageConvert',
      async (job) => {
        started.push(job.id);
        await released;
        return { bytes: 1 };
      },
      { concurrency: 1, host: 'render-7', pollWaitMs: 300 },
    );
    workers.push(busy);
    // An idle worker that stops: it drops out of the registry once the window passes.
    const idle = sdk.consume('sendEmail', async () => ({ messageId: 'm' }), { pollWaitMs: 300, host: 'mail-1' });
    await until(async () => (await sdk.admin.workers()).some((w) => w.host === 'mail-1'), 10_000, 50);
    await idle.close();

    const handle = await sdk.enqueue.imageConvert({ source: 'a.png', output: 'a.webp' }, { leaseMs: 600 });
    await until(() => started.length === 1, 10_000, 20);
    // Busy with one job at concurrency 1, the worker claims nothing: only its lease extensions show it alive.
    await sleep(PRESENCE_WINDOW_MS * 2.5);

    const listed = await sdk.admin.workers();
    expect(listed.map((w) => w.host)).toEqual(['render-7']);
    const [worker] = listed;
    expect(worker).toMatchObject({
      host: 'render-7',
      pid: process.pid,
      names: ['imageConvert'],
      versions: [1, 2],
      activeJobIds: [handle.id],
    });
    expect(worker!.startedAt!.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1_000);
    expect(worker!.startedAt!.getTime()).toBeLessThanOrEqual(Date.now());
    expect(Date.now() - worker!.lastSeenAt.getTime()).toBeLessThan(PRESENCE_WINDOW_MS);
    // The older listing keeps working, over the same window.
    expect((await sdk.admin.stats()).consumers.map((c) => c.id)).toEqual([worker!.id]);

    release();
    await handle.result({ timeoutMs: 10_000 });
    await until(async () => (await sdk.admin.workers())[0]?.activeJobIds.length === 0, 10_000, 50);
  });
});
