import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { type MongoWireDouble, startMongoWireDouble, until } from '@workq/test-support';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';

/** Long enough that only the store's change-stream wake-ups can explain a job reaching a waiting worker soon. */
const POLL_INTERVAL_MS = 30_000;

// Two queue servers on the MongoDB store through the real driver, against the
// fake primary that speaks the wire protocol (no MongoDB server runs here):
// each opens the store from its `mongodb://` URL with default store options,
// so change streams, sessions and retryable writes go over the wire.
let double: MongoWireDouble;
let serverA: QueueServer;
let serverB: QueueServer;
const workers: Worker[] = [];
const loggerA = collectingLogger();

beforeAll(async () => {
  double = await startMongoWireDouble({ database: 'workq_e2e' });
  serverA = await startServer({ store: double.url, port: 0, logger: loggerA });
  serverB = await startServer({
    store: double.url,
    port: 0,
    logger: collectingLogger(),
    pollIntervalMs: POLL_INTERVAL_MS,
  });
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
});

afterAll(async () => {
  await serverA?.close();
  await serverB?.close();
  await double?.close();
});

it('starts with default options, and runs enqueue → consume → result, moveTo and events over the wire', async () => {
  const sdk = createClient({ url: serverA.url, jobs });
  const controller = new AbortController();
  const events: string[] = [];
  const subscription = (async () => {
    for await (const event of sdk.events('sendEmail', { signal: controller.signal })) {
      if (event.type !== 'resync') events.push(`${event.type}:${event.id}`);
    }
  })().catch(() => undefined);
  workers.push(
    sdk.consume('generateReport', async (job, ctx) => {
      await ctx.moveTo('sendEmail', { to: 'owner@example.com', subject: 'report ready', body: job.id });
      return { url: 'unused', rows: 0 };
    }),
    sdk.consume('sendEmail', async (job) => ({ messageId: `m-${job.payload.subject}` })),
  );

  const email = await sdk.enqueue.sendEmail({ to: 'a@example.com', subject: 'hello', body: 'hi' });
  await expect(email.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'm-hello' });
  expect(await email.status()).toMatchObject({ state: 'completed', attempts: 1 });

  const report = await sdk.enqueue.generateReport({
    accountId: 'a',
    kind: 'billing',
    from: '2026-02-01',
    to: '2026-02-28',
  });
  await expect.poll(async () => (await report.status()).state, { timeout: 20_000 }).toBe('completed');
  const movedTo = (await report.status()).movedTo as string;
  await expect(sdk.job('sendEmail', movedTo).result({ timeoutMs: 20_000 })).resolves.toEqual({
    messageId: 'm-report ready',
  });

  await until(() => events.includes(`completed:${movedTo}`), 20_000, 20);
  expect(events).toContain(`enqueued:${movedTo}`);
  controller.abort();
  await subscription;
  expect(loggerA.lines.filter((line) => line.level === 'error')).toEqual([]);
});

it("wakes a worker waiting on the second server when the first server's enqueue lands", async () => {
  const producer = createClient({ url: serverA.url, jobs });
  const consumer = createClient({ url: serverB.url, jobs });
  const handled = new Set<string>();
  workers.push(
    consumer.consume(
      'imageConvert',
      async (job) => {
        handled.add(job.id);
        return { bytes: 1 };
      },
      { pollWaitMs: 25_000 },
    ),
  );
  // The worker waits on server B once B has served its first (empty) claim.
  const claimsBefore = double.commands.length;
  await until(() => double.commands.slice(claimsBefore).some((command) => command.name === 'find'), 10_000, 20);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const handle = await producer.enqueue.imageConvert({ source: 'w.png', output: 'w.webp' });
  // Server B polls every 30 s: only its change stream can bring the job sooner.
  await until(() => handled.has(handle.id), POLL_INTERVAL_MS / 2, 20);
  const streams = double.commands.filter((command) => command.body.pipeline?.[0]?.$changeStream !== undefined);
  expect(streams.length).toBeGreaterThanOrEqual(2);
});
