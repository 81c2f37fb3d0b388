import { createServer } from 'node:net';
import { defineCatalog, defineJob } from '@workq/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultFetch } from '#default-fetch';
import { createClient } from './client.ts';

const jobs = defineCatalog({ probe: defineJob({ version: 1, payload: z.object({ n: z.number() }) }) });

/** A loopback URL nothing listens on: a port just taken and let go. */
async function closedUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe('createClient().ready()', () => {
  it('fails fast with UNAVAILABLE when no server answers, and sends again on the next call', async () => {
    let requests = 0;
    const counting = ((input: RequestInfo | URL, init?: RequestInit) => {
      requests++;
      return defaultFetch(input, init);
    }) as typeof fetch;
    const client = createClient({ url: await closedUrl(), jobs, fetch: counting });
    await expect(client.ready()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(requests).toBe(1);
    await expect(client.ready()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(requests).toBe(2);
  });
});

/** A fetch standing in for a server: answers each procedure with `answer(path, input)`, or fails as it throws. */
function fakeServer(answer: (path: string, input: Record<string, unknown>) => unknown) {
  const sent: { path: string; input: Record<string, unknown> }[] = [];
  const fetch = (async (url: RequestInfo | URL, init?: RequestInit) => {
    const path = new URL(String(url)).pathname.replace('/trpc/', '');
    const input = (JSON.parse(String(init?.body ?? '{}')) as { json?: Record<string, unknown> }).json ?? {};
    sent.push({ path, input });
    const data = { json: await answer(path, input) };
    return new Response(JSON.stringify({ result: { data } }), { headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  return { fetch, sent, enqueues: () => sent.filter((request) => request.path.startsWith('jobs.enqueue')) };
}

const connectionReset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('createClient() enqueue retries', () => {
  it('sends an enqueue whose answer was lost again under the id it made up, with no key, and reports the job as created', async () => {
    let attempts = 0;
    const server = fakeServer((path, input) => {
      if (path !== 'jobs.enqueue') return null;
      attempts++;
      // The first attempt was stored, but its answer never arrived.
      if (attempts === 1) throw connectionReset();
      return { id: (input.options as { id: string }).id, created: false, state: 'ready' };
    });
    const client = createClient({ url: 'http://queue.invalid', jobs, fetch: server.fetch });
    const handle = await client.enqueue.probe({ n: 1 });
    const sent = server.enqueues().map(({ input }) => input.options as { id?: string; idempotencyKey?: string });
    expect(sent).toHaveLength(2);
    expect(sent[0]?.id).toMatch(UUID_V7);
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[0]?.idempotencyKey).toBeUndefined();
    expect([handle.id, handle.created]).toEqual([sent[0]?.id, true]);
  });

  it('sends a flow under a parent id it made up, with no key, and the same id with the same children on a retry', async () => {
    let attempts = 0;
    const server = fakeServer((path, input) => {
      if (path !== 'jobs.enqueue') return null;
      attempts++;
      if (attempts === 1) throw connectionReset();
      return { id: (input.options as { id: string }).id, created: false, state: 'waiting-children' };
    });
    const client = createClient({ url: 'http://queue.invalid', jobs, fetch: server.fetch });
    const handle = await client.enqueue.probe({ n: 1 }, { children: [client.child.probe({ n: 2 })] });
    const [first, second] = server.enqueues().map(({ input }) => input);
    expect(second).toEqual(first);
    const options = first?.options as { id?: string; idempotencyKey?: string };
    expect(options.id).toMatch(UUID_V7);
    expect(options.idempotencyKey).toBeUndefined();
    expect(first?.children).toEqual([{ name: 'probe', version: 1, payload: { n: 2 }, options: {} }]);
    expect([handle.id, handle.created]).toEqual([options.id, true]);
  });

  it('refuses children in enqueueMany, which makes plain jobs, before sending anything', async () => {
    const server = fakeServer(() => null);
    const client = createClient({ url: 'http://queue.invalid', jobs, fetch: server.fetch });
    const children = [client.child.probe({ n: 2 })];
    for (const options of [{ children }, { perJob: [{ children }] }]) {
      await expect(client.enqueueMany.probe([{ n: 1 }], options as never)).rejects.toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining('sdk.enqueue.probe(payload, { children })'),
      });
    }
    expect(server.sent).toEqual([]);
  });

  it('sends an id the caller chose as it is, and reports created as the server answers', async () => {
    const server = fakeServer((path, input) => {
      if (path !== 'jobs.enqueue') return null;
      return { id: (input.options as { id: string }).id, created: false, state: 'ready' };
    });
    const client = createClient({ url: 'http://queue.invalid', jobs, fetch: server.fetch });
    const id = '0190a8c4-3f2e-4c1a-9b6d-2f4e5a6b7c8d';
    const handle = await client.enqueue.probe({ n: 1 }, { id });
    expect([handle.id, handle.created]).toEqual([id, false]);
    expect(server.enqueues().map(({ input }) => input.options)).toEqual([{ id }]);
  });

  it('gives up after its retries, saying the job may have been stored and under which id to send it again', async () => {
    const server = fakeServer((path) => {
      if (path.startsWith('jobs.enqueue')) throw connectionReset();
      return null;
    });
    const client = createClient({ url: 'http://queue.invalid', jobs, fetch: server.fetch, enqueueRetries: 1 });
    const failure = client.enqueue.probe({ n: 1 }, { idempotencyKey: 'order-7' });
    await expect(failure).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      retryable: true,
      message: expect.stringMatching(/after 2 attempts.*may have been stored.*with id "[0-9a-f-]{36}"/),
      details: { attempts: 2, mayBeStored: true, id: expect.stringMatching(UUID_V7), idempotencyKey: 'order-7' },
    });
    expect(server.enqueues()).toHaveLength(2);
  });

  it('says nothing was stored when the server was never reached', async () => {
    const client = createClient({ url: await closedUrl(), jobs, enqueueRetries: 1 });
    await expect(client.enqueue.probe({ n: 1 })).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: expect.stringContaining('not stored: the request never reached the server'),
      details: { mayBeStored: false },
    });
  });

  it('with enqueueRetries 0, sends once, under an id of its own', async () => {
    const server = fakeServer((path) => {
      if (path.startsWith('jobs.enqueue')) throw connectionReset();
      return null;
    });
    const client = createClient({ url: 'http://queue.invalid', jobs, fetch: server.fetch, enqueueRetries: 0 });
    await expect(client.enqueue.probe({ n: 1 })).rejects.toMatchObject({
      message: expect.stringMatching(/may have been stored all the same: enqueue it again with id "[0-9a-f-]{36}"/),
    });
    expect(server.enqueues().map(({ input }) => input.options)).toEqual([{ id: expect.stringMatching(UUID_V7) }]);
  });

  it('sends each job of a batch under its own id, made up where the caller gave none, with the same ids on a retry', async () => {
    let attempts = 0;
    const server = fakeServer((path, input) => {
      if (path !== 'jobs.enqueueMany') return null;
      attempts++;
      if (attempts === 1) throw connectionReset();
      // The first attempt stored them all: each id finds its job, and the caller's key a job someone else made.
      const ids = input.ids as string[];
      return ids.map((id, i) => ({ id: i === 0 ? 'holder-of-mine' : id, created: false, state: 'ready' }));
    });
    const client = createClient({ url: 'http://queue.invalid', jobs, fetch: server.fetch });
    const handles = await client.enqueueMany.probe([{ n: 0 }, { n: 1 }, { n: 2 }], {
      priority: 3,
      perJob: [{ idempotencyKey: 'mine' }, undefined, { delayMs: 500 }],
    });
    // Under the caller's own key the job may be someone else's; under a made-up id it can only be this call's.
    expect(handles.map((handle) => handle.created)).toEqual([false, true, true]);
    const [first, second] = server.enqueues().map(({ input }) => input);
    expect(handles.slice(1).map((handle) => handle.id)).toEqual((first as { ids: string[] }).ids.slice(1));
    expect(second).toEqual(first);
    expect(first).toMatchObject({
      options: { priority: 3 },
      perJob: [{ idempotencyKey: 'mine' }, null, { delayMs: 500 }],
      ids: [expect.stringMatching(UUID_V7), expect.stringMatching(UUID_V7), expect.stringMatching(UUID_V7)],
    });
    expect(first).not.toHaveProperty('idempotencyKeys');
    const ids = first?.ids as string[];
    expect(ids[0]! < ids[1]! && ids[1]! < ids[2]!).toBe(true);
  });
});
