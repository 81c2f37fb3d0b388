import { get as httpGet, type IncomingMessage } from 'node:http';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, isWorkqError, type JobEvent, PermanentError, type ResyncEvent, type Worker } from '@workq/sdk';
import { startTcpProxy, until } from '@workq/test-support';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { eventTypes } from '../support/event-order.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import {
  describeEachStore,
  type FreshStore,
  IN_PROCESS_STORES,
  SHARED_STORES,
  serverStore,
} from '../support/stores.ts';

type Jobs = typeof jobs;
type AnyEvent = JobEvent<Jobs> | ResyncEvent;

/** Long enough that only the store's cross-server messages can explain an event crossing servers quickly. */
const POLL_INTERVAL_MS = 30_000;

/** Iterates `iterable` in the background into `events`, until `stop()`; `failure` holds what it threw. */
function collect(iterable: (signal: AbortSignal) => AsyncIterable<AnyEvent>, bodyDelayMs = 0) {
  const controller = new AbortController();
  const events: AnyEvent[] = [];
  const state: { failure: unknown; done: boolean } = { failure: undefined, done: false };
  const running = (async () => {
    try {
      for await (const event of iterable(controller.signal)) {
        events.push(event);
        if (bodyDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, bodyDelayMs));
      }
    } catch (error) {
      state.failure = error;
    } finally {
      state.done = true;
    }
  })();
  return {
    events,
    state,
    /**
     * The events of one job. A job claimed the moment it is enqueued may show `started` before
     * `enqueued` (docs/events.md, order): that pair is put back in order; all else is as received.
     */
    of: (id: string) => {
      const own = events.filter((e): e is JobEvent<Jobs> => e.type !== 'resync' && e.id === id);
      const [first, second] = own;
      if (first?.type === 'started' && second?.type === 'enqueued') own.splice(0, 2, second, first);
      return own;
    },
    resyncs: () => events.filter((e) => e.type === 'resync').length,
    stop: async () => {
      controller.abort();
      await running;
    },
  };
}

/** Enqueues probe jobs until the subscriber sees one's `enqueued` event: from then on it is connected. */
async function connected(seen: ReturnType<typeof collect>, enqueueProbe: () => Promise<{ id: string }>) {
  const probes: string[] = [];
  await until(
    async () => {
      if (probes.some((id) => seen.of(id).length > 0)) return true;
      probes.push((await enqueueProbe()).id);
      return false;
    },
    15_000,
    200,
  );
}

const SINGLE_SERVER_STORES = IN_PROCESS_STORES.filter((kind) =>
  ['postgres', 'pglite', 'mongodb (wire double)'].includes(kind.label),
);

await describeEachStore(SINGLE_SERVER_STORES, 'job events on $label', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;
  const workers: Worker[] = [];
  const stops: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    target = await open();
    server = await startServer({
      port: 0,
      store: await serverStore(target),
      logger: collectingLogger(),
      tokens: [
        { token: 'admin-token-0123456789', scopes: ['admin'] },
        { token: 'email-token-0123456789', scopes: ['produce:sendEmail'] },
        { token: 'image-worker-token-01', scopes: ['consume:imageConvert'] },
      ],
    });
  });

  afterEach(async () => {
    await Promise.all(stops.splice(0).map((stop) => stop()));
    await Promise.all(workers.splice(0).map((worker) => worker.close()));
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  it('reports each step of a job, with the result typed and parsed by the catalog', async () => {
    const sdk = createClient({ url: server.url, jobs, token: 'admin-token-0123456789' });
    const seen = collect((signal) => sdk.events('imageConvert', { signal }));
    stops.push(seen.stop);
    await connected(seen, () => sdk.enqueue.imageConvert({ source: 'probe', output: 'probe' }, { delayMs: 600_000 }));

    let failedOnce = false;
    workers.push(
      sdk.consume(
        'imageConvert',
        async (job, ctx) => {
          if (job.payload.source === 'bad') throw new PermanentError('cannot read bad');
          if (job.payload.source === 'flaky' && !failedOnce) {
            failedOnce = true;
            throw new Error('flaky the first time');
          }
          await ctx.progress(50);
          return { bytes: 1234, width: 640 };
        },
        { concurrency: 2 },
      ),
    );
    const good = await sdk.enqueue.imageConvert({ source: 'a.png', output: 'a.webp' });
    const bad = await sdk.enqueue.imageConvert({ source: 'bad', output: 'b.webp' });
    const flaky = await sdk.enqueue.imageConvert(
      { source: 'flaky', output: 'c.webp' },
      { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0 } },
    );
    const later = await sdk.enqueue.imageConvert({ source: 'later', output: 'd.webp' }, { delayMs: 600_000 });
    await later.cancel();

    await until(() => seen.of(good.id).some((e) => e.type === 'completed'), 15_000);
    await until(() => seen.of(bad.id).some((e) => e.type === 'dead'), 15_000);
    await until(() => seen.of(flaky.id).some((e) => e.type === 'completed'), 15_000);
    await until(() => seen.of(later.id).some((e) => e.type === 'cancelled'), 15_000);

    expect(eventTypes(seen.of(good.id))).toEqual(['enqueued', 'started', 'progress', 'completed']);
    const completed = seen.of(good.id).at(-1);
    expect(completed).toMatchObject({
      name: 'imageConvert',
      version: 2,
      attempt: 1,
      result: { bytes: 1234, width: 640 },
    });
    expect(completed?.at).toBeInstanceOf(Date);
    expect(seen.of(good.id)[2]).toMatchObject({ type: 'progress', progress: 50 });

    expect(eventTypes(seen.of(bad.id))).toEqual(['enqueued', 'started', 'failed', 'dead']);
    expect(seen.of(bad.id)[2]).toMatchObject({
      attempt: 1,
      willRetry: false,
      error: { message: 'cannot read bad', permanent: true },
    });

    expect(seen.of(flaky.id).map((e) => e.type)).toEqual([
      'enqueued',
      'started',
      'failed',
      'started',
      'progress',
      'completed',
    ]);
    expect(seen.of(flaky.id)[2]).toMatchObject({
      attempt: 1,
      willRetry: true,
      error: { message: 'flaky the first time' },
    });
    expect(seen.of(flaky.id)[3]).toMatchObject({ attempt: 2 });

    expect(seen.of(later.id).map((e) => e.type)).toEqual(['enqueued', 'cancelled']);
    expect(seen.resyncs()).toBe(0);
  });

  it('shows a token only the job types it may produce, consume or administer', async () => {
    const admin = createClient({ url: server.url, jobs, token: 'admin-token-0123456789' });
    const email = createClient({ url: server.url, jobs, token: 'email-token-0123456789' });
    const imageWorker = createClient({ url: server.url, jobs, token: 'image-worker-token-01' });
    const emailSeen = collect((signal) => email.events(undefined, { signal }));
    const imageSeen = collect((signal) => imageWorker.events('imageConvert', { signal }));
    stops.push(emailSeen.stop, imageSeen.stop);
    const probe = { to: 'probe@example.com', subject: 'probe', body: '' };
    await connected(emailSeen, () => email.enqueue.sendEmail(probe, { delayMs: 600_000 }));
    await connected(imageSeen, () =>
      admin.enqueue.imageConvert({ source: 'probe', output: 'p' }, { delayMs: 600_000 }),
    );

    const image = await admin.enqueue.imageConvert({ source: 'x.png', output: 'x.webp' }, { delayMs: 600_000 });
    const mail = await admin.enqueue.sendEmail({ to: 'a@example.com', subject: 'hi', body: '' }, { delayMs: 600_000 });
    await until(() => emailSeen.of(mail.id).length > 0 && imageSeen.of(image.id).length > 0, 10_000);
    expect(emailSeen.events.every((e) => e.type === 'resync' || e.name === 'sendEmail')).toBe(true);
    expect(imageSeen.events.every((e) => e.type === 'resync' || e.name === 'imageConvert')).toBe(true);
    expect(imageSeen.of(mail.id)).toEqual([]);

    // A named type the token may not see is refused, not silently empty; no token at all is refused too.
    const refused = collect((signal) => email.events('imageConvert', { signal }));
    await until(() => refused.state.done, 10_000);
    expect(isWorkqError(refused.state.failure, 'FORBIDDEN')).toBe(true);
    const anonymous = createClient({ url: server.url, jobs });
    const unauthorized = collect((signal) => anonymous.events(undefined, { signal }));
    await until(() => unauthorized.state.done, 10_000);
    expect(isWorkqError(unauthorized.state.failure, 'UNAUTHORIZED')).toBe(true);
  });

  it('gives a subscriber that falls behind a resync, while the queue drains at its own pace', async () => {
    const sdk = createClient({ url: server.url, jobs, token: 'admin-token-0123456789' });
    // Reads one event every 50 ms, keeping at most 20: far slower than the queue below makes them.
    const slow = collect((signal) => sdk.events('sendEmail', { signal, maxBufferedEvents: 20 }), 50);
    stops.push(slow.stop);
    const probe = { to: 'probe@example.com', subject: 'probe', body: '' };
    await connected(slow, () => sdk.enqueue.sendEmail(probe, { delayMs: 600_000 }));

    const done = new Set<string>();
    workers.push(
      sdk.consume(
        'sendEmail',
        async (job) => {
          done.add(job.id);
          return { messageId: job.id };
        },
        { concurrency: 20 },
      ),
    );
    const count = 300;
    const handles = await sdk.enqueueMany.sendEmail(
      Array.from({ length: count }, (_, i) => ({ to: `u${i}@example.com`, subject: `s${i}`, body: '' })),
    );
    const startedAt = Date.now();
    await until(() => handles.every((h) => done.has(h.id)), 30_000);
    // The subscriber alone would need 3 events × 300 jobs × 50 ms = 45 s to read them all.
    expect(Date.now() - startedAt).toBeLessThan(20_000);
    await until(() => slow.resyncs() > 0, 10_000);
    expect(slow.events.length).toBeLessThan(3 * count);
  });

  it('gives a resync to a subscriber whose kept events pass its bytes, counting their results', async () => {
    const sdk = createClient({ url: server.url, jobs, token: 'admin-token-0123456789' });
    // Far fewer events than it may keep, but 100 results of 20 KB are ten times the bytes it may.
    const options = { maxBufferedEvents: 10_000, maxBufferedBytes: 200_000 };
    const slow = collect((signal) => sdk.events('sendEmail', { signal, ...options }), 20);
    stops.push(slow.stop);
    const probe = { to: 'probe@example.com', subject: 'probe', body: '' };
    await connected(slow, () => sdk.enqueue.sendEmail(probe, { delayMs: 600_000 }));

    const done = new Set<string>();
    const large = 'r'.repeat(20_000);
    workers.push(
      sdk.consume(
        'sendEmail',
        async (job) => {
          done.add(job.id);
          return { messageId: `${job.id}:${large}` };
        },
        { concurrency: 20 },
      ),
    );
    const count = 100;
    const handles = await sdk.enqueueMany.sendEmail(
      Array.from({ length: count }, (_, i) => ({ to: `u${i}@example.com`, subject: `b${i}`, body: '' })),
    );
    await until(() => handles.every((h) => done.has(h.id)), 30_000);
    await until(() => slow.resyncs() > 0, 10_000);
    expect(slow.events.length).toBeLessThan(3 * count);
  });
});

await describeEachStore(SHARED_STORES, 'job events across two servers on one $label store', ({ open }) => {
  let target: FreshStore | undefined;
  let serverA: QueueServer;
  let serverB: QueueServer;
  const workers: Worker[] = [];

  beforeAll(async () => {
    target = await open();
    const options = { port: 0, pollIntervalMs: POLL_INTERVAL_MS, logger: collectingLogger() };
    serverA = await startServer({ ...options, store: await serverStore(target) });
    serverB = await startServer({ ...options, store: await serverStore(target) });
  });

  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await serverA?.close();
    await serverB?.close();
    await target?.drop();
  });

  it('delivers to a subscriber on A the events of jobs enqueued and processed through B, results included', async () => {
    const onA = createClient({ url: serverA.url, jobs });
    const onB = createClient({ url: serverB.url, jobs });
    const seen = collect((signal) => onA.events(undefined, { signal }));
    const report = { accountId: 'acc', kind: 'usage', from: '2026-01-01', to: '2026-01-31' } as const;
    try {
      await connected(seen, () => onB.enqueue.generateReport(report, { delayMs: 600_000 }));
      // One result small enough to travel with its event, one too large (read back by id on A).
      const longUrl = `https://reports.example.com/${'r'.repeat(6_000)}`;
      workers.push(
        onB.consume('generateReport', async (job) => ({
          url: job.payload.accountId === 'large' ? longUrl : 'https://reports.example.com/1',
          rows: 7,
        })),
      );
      const small = await onB.enqueue.generateReport(report);
      const large = await onB.enqueue.generateReport({ ...report, accountId: 'large' });
      await until(() => [small, large].every((h) => seen.of(h.id).some((e) => e.type === 'completed')), 15_000);
      expect(eventTypes(seen.of(small.id))).toEqual(['enqueued', 'started', 'completed']);
      expect(seen.of(small.id).at(-1)?.result).toEqual({ url: 'https://reports.example.com/1', rows: 7 });
      expect(seen.of(large.id).at(-1)?.result).toEqual({ url: longUrl, rows: 7 });
    } finally {
      await seen.stop();
    }
  });
});

const POSTGRES = SHARED_STORES.filter((kind) => kind.label === 'postgres');

await describeEachStore(POSTGRES, 'a subscriber that reconnects, on $label', ({ open }) => {
  it('resumes after its last event on the same server, and gets resync from a server that cannot resume it', async () => {
    const logger = collectingLogger();
    const target = await open();
    const server = await startServer({ port: 0, store: await serverStore(target), logger });
    const proxy = await startTcpProxy('127.0.0.1', server.port);
    const sdk = createClient({ url: server.url, jobs });
    const throughProxy = createClient({ url: `http://127.0.0.1:${proxy.port}`, jobs });
    const seen = collect((signal) => throughProxy.events('sendEmail', { signal }));
    const mail = (subject: string) => ({ to: 'a@example.com', subject, body: '' });
    try {
      await connected(seen, () => sdk.enqueue.sendEmail(mail('probe'), { delayMs: 600_000 }));
      proxy.cut();
      const missed = await sdk.enqueue.sendEmail(mail('while cut'), { delayMs: 600_000 });
      proxy.restore();
      await until(() => seen.of(missed.id).length > 0, 15_000);
      expect(seen.resyncs()).toBe(0);

      // Another server (another process start) cannot know what this subscriber missed: it says so.
      await server.close();
      const restarted = await startServer({ port: server.port, store: await serverStore(target), logger });
      try {
        await until(() => seen.resyncs() > 0, 15_000);
        const after = await sdk.enqueue.sendEmail(mail('after restart'), { delayMs: 600_000 });
        await until(() => seen.of(after.id).length > 0, 15_000);
        expect(seen.state.failure).toBeUndefined();
      } finally {
        await seen.stop();
        await restarted.close();
      }
    } finally {
      await seen.stop();
      await proxy.close();
      await server.close();
      await target.drop();
    }
  });
});

/** An event stream read with plain HTTP, which the test can stop reading: a subscriber whose socket fills. */
async function openRawStream(serverUrl: string, name: string) {
  const input = encodeURIComponent(JSON.stringify({ json: { name } }));
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const request = httpGet(`${serverUrl}/trpc/events.watch?input=${input}`, {
      headers: { accept: 'text/event-stream' },
    });
    request.once('response', resolve);
    request.once('error', reject);
  });
  let text = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    text += chunk;
  });
  response.on('error', () => undefined);
  return { response, text: () => text };
}

await describeEachStore(POSTGRES, 'a subscriber that stops reading, on $label', ({ open }) => {
  it('never holds the queue back: the queue drains, the subscriber later gets resync, and a stalled one does not hold the shutdown', async () => {
    const target = await open();
    const server = await startServer({
      port: 0,
      store: await serverStore(target),
      logger: collectingLogger(),
      limits: { maxBufferedEvents: 50 },
    });
    const sdk = createClient({ url: server.url, jobs });
    let worker: Worker | undefined;
    const streams: Awaited<ReturnType<typeof openRawStream>>[] = [];
    try {
      const report = { accountId: 'acc', kind: 'usage', from: '2026-01-01', to: '2026-01-31' } as const;
      await sdk.ready();
      const slow = await openRawStream(server.url, 'generateReport');
      const stalled = await openRawStream(server.url, 'generateReport');
      streams.push(slow, stalled);
      expect(slow.response.statusCode).toBe(200);
      await until(() => slow.text().includes('data:') && stalled.text().includes('data:'), 10_000);
      slow.response.pause();
      stalled.response.pause();

      // Each completed event carries a 32 KiB result: a few hundred fill any socket buffer, then the server's own.
      const bigUrl = `https://reports.example.com/${'x'.repeat(32 * 1024)}`;
      const done = new Set<string>();
      worker = sdk.consume(
        'generateReport',
        async (job) => {
          done.add(job.id);
          return { url: bigUrl, rows: 1 };
        },
        { concurrency: 20 },
      );
      const handles = await sdk.enqueueMany.generateReport(Array.from({ length: 400 }, () => report));
      await until(() => handles.every((h) => done.has(h.id)), 30_000, 50);
      await worker.close();
      worker = undefined;

      slow.response.resume();
      await until(() => slow.text().includes('[-1,'), 30_000, 50);

      const closing = server.close();
      await expect(Promise.race([closing.then(() => 'closed'), sleep(15_000).then(() => 'stuck')])).resolves.toBe(
        'closed',
      );
    } finally {
      for (const stream of streams) stream.response.destroy();
      await worker?.close();
      await server.close();
      await target.drop();
    }
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
