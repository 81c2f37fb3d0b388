import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker, WorkqError } from '@workq/sdk';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { describeEachStore, type FreshStore, SHARED_STORES, serverStore } from '../support/stores.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const TOKEN = 'flow-control-e2e-secret';
const email = (i: number) => ({ to: `u${i}@example.com`, subject: `s${i}`, body: 'hi' });

/** Pause, limits and groups through the SDK, set on one server and honoured by the other, on one store. */
await describeEachStore(SHARED_STORES, 'flow control across two servers on one $label store', ({ open }) => {
  let target: FreshStore | undefined;
  let serverA: QueueServer;
  let serverB: QueueServer;
  const workers: Worker[] = [];

  beforeAll(async () => {
    target = await open();
    const tokens = [{ token: TOKEN, scopes: ['produce:*', 'consume:*', 'admin'] }];
    const options = { port: 0, tokens, logger: collectingLogger() };
    serverA = await startServer({ ...options, store: await serverStore(target) });
    serverB = await startServer({ ...options, store: await serverStore(target) });
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
  });

  afterAll(async () => {
    await serverA?.close();
    await serverB?.close();
    await target?.drop();
  });

  const client = (server: QueueServer) => createClient({ url: server.url, jobs, token: TOKEN });

  it('pause on A holds the consumers of B while jobs keep arriving; resume on B releases them', async () => {
    const [a, b] = [client(serverA), client(serverB)];
    await a.admin.pause('sendEmail');
    const handles = await a.enqueueMany.sendEmail([email(1), email(2), email(3)]);
    const handled = new Set<string>();
    workers.push(
      b.consume(
        'sendEmail',
        async (job) => {
          handled.add(job.id);
          return { messageId: job.id };
        },
        { concurrency: 2 },
      ),
    );
    await sleep(1_500);
    expect(handled.size).toBe(0);
    const paused = (await b.admin.queues()).find((q) => q.name === 'sendEmail');
    expect(paused).toMatchObject({ paused: true, counts: { ready: 3 } });
    expect(paused?.versions).toEqual([{ version: 1, counts: expect.objectContaining({ ready: 3 }) }]);

    await b.admin.resume('sendEmail');
    await Promise.all(handles.map((h) => h.result({ timeoutMs: 5_000 })));
    expect((await a.admin.queues()).find((q) => q.name === 'sendEmail')).toMatchObject({
      paused: false,
      counts: { completed: 3, ready: 0 },
    });
  });

  it('concurrency set on A holds across workers on both servers, and null clears it', async () => {
    const [a, b] = [client(serverA), client(serverB)];
    expect(await a.admin.setLimits('generateReport', { concurrency: 2 })).toEqual({
      concurrency: 2,
      rateLimit: null,
      groupConcurrency: null,
      groupOrder: null,
    });
    let running = 0;
    let most = 0;
    const handler = async () => {
      running += 1;
      most = Math.max(most, running);
      await sleep(40);
      running -= 1;
      return { url: 'https://example.com/r', rows: 1 };
    };
    for (const sdk of [a, b]) workers.push(sdk.consume('generateReport', handler, { concurrency: 4 }));
    const report = (i: number) => ({
      accountId: `a${i}`,
      kind: 'usage' as const,
      from: '2026-01-01',
      to: '2026-01-31',
    });
    const handles = await a.enqueueMany.generateReport(Array.from({ length: 16 }, (_, i) => report(i)));
    await Promise.all(handles.map((h) => h.result({ timeoutMs: 20_000 })));
    expect(most).toBe(2);
    const listed = (await b.admin.queues()).find((q) => q.name === 'generateReport');
    expect(listed?.limits).toEqual({ concurrency: 2, rateLimit: null, groupConcurrency: null, groupOrder: null });

    await b.admin.setLimits('generateReport', { concurrency: null, rateLimit: { max: 100, perMs: 1000 } });
    const cleared = (await a.admin.queues()).find((q) => q.name === 'generateReport');
    expect(cleared?.limits).toEqual({
      concurrency: null,
      rateLimit: { max: 100, perMs: 1000 },
      groupConcurrency: null,
      groupOrder: null,
    });
    const error = await a.admin.setLimits('generateReport', { concurrency: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkqError);
    expect((error as WorkqError).code).toBe('VALIDATION');
  });

  it('groups take turns and groupConcurrency 1 runs one job of a group at a time, across both servers', async () => {
    const [a, b] = [client(serverA), client(serverB)];
    await a.admin.setLimits('sendEmail', { groupConcurrency: 1 });
    const big = await a.enqueueMany.sendEmail(
      Array.from({ length: 30 }, (_, i) => email(100 + i)),
      { group: 'big' },
    );
    const small = await b.enqueueMany.sendEmail([email(200), email(201), email(202)], { group: 'small' });
    const started: string[] = [];
    const running = new Map<string, number>();
    let most = 0;
    const groupOf = new Map([...big.map((h) => [h.id, 'big'] as const), ...small.map((h) => [h.id, 'small'] as const)]);
    const handler = async (job: { id: string }) => {
      const group = groupOf.get(job.id) ?? '?';
      started.push(job.id);
      running.set(group, (running.get(group) ?? 0) + 1);
      most = Math.max(most, running.get(group) ?? 0);
      await sleep(5);
      running.set(group, (running.get(group) ?? 0) - 1);
      return { messageId: job.id };
    };
    for (const sdk of [a, b]) workers.push(sdk.consume('sendEmail', handler, { concurrency: 3 }));
    await Promise.all([...big, ...small].map((h) => h.result({ timeoutMs: 30_000 })));
    expect(most).toBe(1);
    const positions = small.map((h) => started.indexOf(h.id));
    // Turns: the small group's jobs alternate with the big group's, not wait behind its 30.
    expect(Math.max(...positions)).toBeLessThan(10);
  });

  it('under a concurrency limit a claim counts after the acks it carries, and tells its worker the type is limited', async () => {
    const a = client(serverA);
    await a.admin.setLimits('imageConvert', { concurrency: 1 });
    await a.enqueueMany.imageConvert([
      { source: 'a.png', output: 'a.webp' },
      { source: 'b.png', output: 'b.webp' },
    ]);
    const raw = rawClient(serverA.url, TOKEN);
    const input = { name: 'imageConvert', maxVersion: 2, limit: 5, workerId: 'flow-raw', waitMs: 0 };
    const first = await raw.consumer.claim.mutate(input);
    expect(first).toMatchObject({ concurrencyLimited: true });
    expect(first.jobs).toHaveLength(1);
    const held = first.jobs[0] as { id: string; leaseToken: string };
    // The type is full until the ack commits: a claim that counted beside it would find no room, and not wait.
    const complete = [{ id: held.id, leaseToken: held.leaseToken, result: { bytes: 1 } }];
    const second = await raw.consumer.claim.mutate({ ...input, complete });
    expect(second.completed).toEqual([held.id]);
    expect(second.jobs).toHaveLength(1);
    await a.admin.setLimits('imageConvert', { concurrency: null });
    expect(await raw.consumer.claim.mutate(input)).toMatchObject({ jobs: [], concurrencyLimited: false });
  });
});
