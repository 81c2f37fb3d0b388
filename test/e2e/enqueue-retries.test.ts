import { connect, createServer, type Server, type Socket } from 'node:net';
import { jobs } from '@workq/schemas';
import { createClient, WorkqError } from '@workq/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { oneServerOnStore } from '../support/one-server.ts';
import { describeEachStore, IN_PROCESS_STORES } from '../support/stores.ts';

/**
 * A TCP relay to a server that can lose the answer to the next request: the request reaches the server and is
 * carried out, but its answer is dropped with the connection, as when a link or a proxy fails at that moment.
 */
interface LossyProxy {
  url: string;
  /** The next answer from the server is dropped, and the connection with it. */
  loseNextAnswer(): void;
  /** Answers dropped so far. */
  lost(): number;
  close(): Promise<void>;
}

async function startLossyProxy(target: string): Promise<LossyProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let loseNext = false;
  let lost = 0;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const relay: Server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (loseNext) {
        loseNext = false;
        lost++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(relay.address() as { port: number }).port}`,
    loseNextAnswer: () => {
      loseNext = true;
    },
    lost: () => lost,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => relay.close(resolve));
    },
  };
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const payloadsOf = (tag: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({ source: `in/${tag}-${i}.png`, output: `out/${tag}-${i}.webp` }));

await describeEachStore(IN_PROCESS_STORES, 'enqueues sent again over $label', ({ open }) => {
  const server = oneServerOnStore(open, { pollIntervalMs: 200 });
  let proxy: LossyProxy;

  beforeAll(async () => {
    proxy = await startLossyProxy(server.url);
  });

  afterAll(async () => {
    await proxy?.close();
  });

  /** How many imageConvert jobs the store holds, in any state. */
  const storedJobs = async (): Promise<number> => {
    const { counts } = await createClient({ url: server.url, jobs }).admin.stats();
    return counts.filter((row) => row.name === 'imageConvert').reduce((sum, row) => sum + row.count, 0);
  };

  it('an enqueue whose answer was lost is sent again under the id the SDK made, makes exactly one job and stores no key', async () => {
    const sdk = createClient({ url: proxy.url, jobs });
    await sdk.ready();
    const [before, lostBefore] = [await storedJobs(), proxy.lost()];
    proxy.loseNextAnswer();
    const handle = await sdk.enqueue.imageConvert({ source: 'in/lone.png', output: 'out/lone.webp' });
    expect(proxy.lost() - lostBefore).toBe(1);
    expect(handle.created).toBe(true);
    expect((await storedJobs()) - before).toBe(1);
    expect(handle.id).toMatch(UUID_V7);
    const status = await handle.status();
    expect(status.id).toBe(handle.id);
    expect(status).not.toHaveProperty('idempotencyKey');
  });

  it('an enqueueMany whose answer was lost is sent again and makes each job once, under ids in the order sent, with no keys', async () => {
    const sdk = createClient({ url: proxy.url, jobs });
    await sdk.ready();
    const [before, lostBefore] = [await storedJobs(), proxy.lost()];
    proxy.loseNextAnswer();
    const handles = await sdk.enqueueMany.imageConvert(payloadsOf('batch', 25));
    expect(proxy.lost() - lostBefore).toBe(1);
    expect(new Set(handles.map((handle) => handle.id)).size).toBe(25);
    expect(handles.every((handle) => handle.created)).toBe(true);
    expect((await storedJobs()) - before).toBe(25);
    const ids = handles.map((handle) => handle.id);
    expect(ids).toEqual([...ids].sort());
    const statuses = await Promise.all(handles.map((handle) => handle.status()));
    expect(statuses.filter((status) => status.idempotencyKey !== undefined)).toEqual([]);
  });

  it('a caller-chosen id: the same job enqueued again is that job; another payload under it is CONFLICT, naming the id', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const before = await storedJobs();
    const id = crypto.randomUUID();
    const payload = { source: 'in/chosen.png', output: 'out/chosen.webp' };
    const first = await sdk.enqueue.imageConvert(payload, { id });
    expect([first.id, first.created]).toEqual([id, true]);
    const again = await sdk.enqueue.imageConvert(payload, { id });
    expect([again.id, again.created]).toEqual([id, false]);
    const [many] = await sdk.enqueueMany.imageConvert([payload], { perJob: [{ id }] });
    expect([many?.id, many?.created]).toEqual([id, false]);
    const held = await first.status();
    const conflict = await sdk.enqueue
      .imageConvert({ ...payload, quality: 10 }, { id })
      .catch((error: unknown) => error);
    expect(conflict).toBeInstanceOf(WorkqError);
    expect(conflict).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(id), details: { ids: [id] } });
    await expect(sdk.enqueue.imageConvert(payload, { id: 'order-42' })).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringContaining('id must be a UUID'),
    });
    expect((await storedJobs()) - before).toBe(1);
    expect(await first.status()).toEqual(held);
  });

  /** A report whose children convert its images: a flow of `generateReport` over `imageConvert` children. */
  const reportFlow = (sdk: ReturnType<typeof createClient<typeof jobs>>, tag: string) =>
    [
      { accountId: `acct-${tag}`, kind: 'usage' as const, from: '2026-11-01', to: '2026-11-30' },
      { children: payloadsOf(tag, 3).map((payload) => sdk.child.imageConvert(payload)) },
    ] as const;

  it('a flow whose answer was lost is sent again under the parent id the SDK made: one parent, its children once, and no key', async () => {
    const sdk = createClient({ url: proxy.url, jobs });
    await sdk.ready();
    const [before, lostBefore] = [await storedJobs(), proxy.lost()];
    proxy.loseNextAnswer();
    const parent = await sdk.enqueue.generateReport(...reportFlow(sdk, 'lost-flow'));
    expect(proxy.lost() - lostBefore).toBe(1);
    expect(parent.created).toBe(true);
    expect(parent.id).toMatch(UUID_V7);
    expect((await storedJobs()) - before).toBe(3);
    const status = await parent.status();
    expect(status).toMatchObject({ id: parent.id, state: 'waiting-children' });
    expect(status.children).toHaveLength(3);
    expect(status).not.toHaveProperty('idempotencyKey');
  });

  it("a caller-chosen id on a flow's parent: the same flow sent again is that parent; another payload under it is CONFLICT", async () => {
    const sdk = createClient({ url: server.url, jobs });
    const before = await storedJobs();
    const id = crypto.randomUUID();
    const [payload, options] = reportFlow(sdk, 'chosen-flow');
    const first = await sdk.enqueue.generateReport(payload, { ...options, id });
    expect([first.id, first.created]).toEqual([id, true]);
    const again = await sdk.enqueue.generateReport(payload, { ...options, id });
    expect([again.id, again.created]).toEqual([id, false]);
    const held = await first.status();
    const conflict = await sdk.enqueue
      .generateReport({ ...payload, kind: 'audit' }, { ...options, id })
      .catch((error: unknown) => error);
    expect(conflict).toBeInstanceOf(WorkqError);
    expect(conflict).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(id), details: { ids: [id] } });
    expect((await storedJobs()) - before).toBe(3);
    expect(await first.status()).toEqual(held);
  });

  it('enqueueMany with a key per job: the same batch sent again returns the same jobs and makes none', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const before = await storedJobs();
    const payloads = payloadsOf('keyed', 10);
    const perJob = payloads.map((payload) => ({ idempotencyKey: payload.output }));
    const first = await sdk.enqueueMany.imageConvert(payloads, { priority: 2, perJob });
    expect(first.every((handle) => handle.created)).toBe(true);
    expect(new Set(first.map((handle) => handle.id)).size).toBe(10);

    const again = await sdk.enqueueMany.imageConvert(payloads, { priority: 2, perJob });
    expect(again.map((handle) => handle.id)).toEqual(first.map((handle) => handle.id));
    expect(again.every((handle) => !handle.created)).toBe(true);

    // A batch that overlaps: the known keys return their jobs, the new ones make jobs.
    const more = payloadsOf('keyed', 12).slice(8);
    const overlapping = await sdk.enqueueMany.imageConvert(more, {
      perJob: more.map((payload) => ({ idempotencyKey: payload.output })),
    });
    expect(overlapping.map((handle) => handle.created)).toEqual([false, false, true, true]);
    expect(overlapping.slice(0, 2).map((handle) => handle.id)).toEqual(first.slice(8).map((handle) => handle.id));
    expect((await storedJobs()) - before).toBe(12);
    const status = await first[3]?.status();
    expect(status).toMatchObject({ idempotencyKey: 'out/keyed-3.webp', priority: 2 });
  });

  it('enqueueMany gives each job the options of its own over the batch’s', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const payloads = payloadsOf('own', 3);
    const handles = await sdk.enqueueMany.imageConvert(payloads, {
      priority: 1,
      perJob: [undefined, { priority: 9, maxAttempts: 2 }, { delayMs: 60_000 }],
    });
    const statuses = await Promise.all(handles.map((handle) => handle.status()));
    expect(statuses.map((status) => [status.priority, status.maxAttempts, status.state])).toEqual([
      [1, 5, 'ready'],
      [9, 2, 'ready'],
      [1, 5, 'scheduled'],
    ]);
  });
});
