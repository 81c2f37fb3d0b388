import { get as httpGet, type IncomingMessage } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { defineCatalog, defineJob } from '@workq/core';
import { mintToken, type QueueServer, startServer } from '@workq/queue-server';
import { createClient, isWorkqError } from '@workq/sdk';
import { freshPostgresSchema, until } from '@workq/test-support';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';

const catalog = defineCatalog({
  bigReport: defineJob({
    version: 1,
    payload: z.object({}),
    result: z.object({ rows: z.array(z.object({ i: z.number(), text: z.string() })) }),
  }),
});

/** An event stream read as raw bytes, so the test's own parsing costs the shared event loop nothing. */
function rawStream(url: string, name: string, token?: string) {
  const state = { bytes: 0, text: '', status: 0, ended: false, keepText: false };
  const input = encodeURIComponent(JSON.stringify({ json: { name } }));
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const request = httpGet(`${url}/trpc/events.watch?input=${input}`, { headers }, (res: IncomingMessage) => {
    state.status = res.statusCode ?? 0;
    res.on('data', (chunk: Buffer) => {
      state.bytes += chunk.length;
      if (state.keepText || state.bytes < 4096) state.text += chunk.toString();
    });
    res.on('close', () => {
      state.ended = true;
    });
  });
  request.on('error', () => {
    state.ended = true;
  });
  return { state, close: () => request.destroy() };
}

describe('event streams with many subscribers and a large result', () => {
  let server: QueueServer | undefined;
  const streams: { close: () => void }[] = [];

  let drop: (() => Promise<void>) | undefined;

  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    await server?.close();
    server = undefined;
    await drop?.();
    drop = undefined;
  });

  it('serialize a batch once, not once per subscriber: 40 subscribers and a 4 MiB result block the loop briefly', async () => {
    // A store in another process (not PGlite, which runs on this event loop), so what blocks the loop is the server's own work.
    const store = await freshPostgresSchema('workq_e2e');
    drop = store.drop;
    server = await startServer({
      store: store.url,
      port: 0,
      jobs: catalog,
      limits: { maxRequestBytes: 32 * 1024 * 1024, maxResultBytes: 8 * 1024 * 1024 },
      logger: collectingLogger(),
    });
    const url = server.url;
    const subscribers = Array.from({ length: 40 }, () => rawStream(url, 'bigReport'));
    streams.push(...subscribers);
    // Each stream's first batch (empty) says it is subscribed.
    await until(() => subscribers.every((s) => s.state.text.includes('"names"')), 10_000, 10);
    const sdk = createClient({ url, jobs: catalog });
    // ~4 MiB of small objects: what serializing a result costs grows with its values, not just its bytes.
    const rows = Array.from({ length: 60_000 }, (_, i) => ({ i, text: `row ${i} `.padEnd(60, 'x') }));
    const worker = sdk.consume('bigReport', async () => ({ rows }));
    const before = subscribers.map((s) => s.state.bytes);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    // Serializations of the result (or of a batch holding it): every JSON text over 1 MB made meanwhile.
    const stringify = JSON.stringify;
    let largeTexts = 0;
    const spy = vi.spyOn(JSON, 'stringify').mockImplementation((...args: Parameters<typeof JSON.stringify>) => {
      const text = stringify(...args);
      if (text !== undefined && text.length > 1_000_000) largeTexts += 1;
      return text;
    });
    try {
      await sdk.enqueue.bigReport({});
      delay.enable();
      await until(() => subscribers.every((s, i) => s.state.bytes - (before[i] ?? 0) > 4_000_000), 120_000, 20);
    } finally {
      spy.mockRestore();
      delay.disable();
      await worker.close();
    }
    const blockedMs = delay.max / 1e6;
    console.info(
      `${subscribers.length} subscribers, one ~4 MiB result: ${largeTexts} serializations over 1 MB, the event loop blocked for at most ${blockedMs.toFixed(0)} ms`,
    );
    // The worker's request, the server's store write and one per run for the streams: never one per subscriber.
    // (Before, each of the 40 streams serialized it again: 40 more, and 5 to 12 s blocked here.)
    expect(largeTexts).toBeLessThan(10);
  }, 180_000);
});

const TOKEN_A = 'event-streams-token-a-0123456789';
const TOKEN_B = 'event-streams-token-b-0123456789';
const SECRET = 'event-streams-e2e-token-secret-0123456789';

/** The `serialized-error` a stream ended with, as text (it names the workq code and the message). */
const refusal = (stream: ReturnType<typeof rawStream>) => stream.state.text.split('event: serialized-error')[1] ?? '';

describe('event streams are capped per token and per server, and end with their token', () => {
  let server: QueueServer | undefined;
  const streams: { close: () => void }[] = [];

  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    await server?.close();
    server = undefined;
  });

  const open = (name: string, token?: string) => {
    const stream = rawStream((server as QueueServer).url, name, token);
    stream.state.keepText = true;
    streams.push(stream);
    return stream;
  };
  const subscribed = (stream: ReturnType<typeof rawStream>) => stream.state.text.includes('"names"');

  it('refuses a token past maxEventStreamsPerToken (FORBIDDEN) and the server past maxEventStreams (UNAVAILABLE)', async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs: catalog,
      tokens: [
        { token: TOKEN_A, scopes: ['admin'] },
        { token: TOKEN_B, scopes: ['admin'] },
      ],
      limits: { maxEventStreamsPerToken: 3, maxEventStreams: 5 },
      logger: collectingLogger(),
    });
    const a = [open('bigReport', TOKEN_A), open('bigReport', TOKEN_A), open('bigReport', TOKEN_A)];
    await until(() => a.every(subscribed), 10_000, 10);
    const fourth = open('bigReport', TOKEN_A);
    await until(() => fourth.state.ended, 10_000, 10);
    expect(refusal(fourth)).toMatch(/holds 3 open event streams.*"workqCode":"FORBIDDEN"/);
    const b = [open('bigReport', TOKEN_B), open('bigReport', TOKEN_B)];
    await until(() => b.every(subscribed), 10_000, 10);
    const sixth = open('bigReport', TOKEN_B);
    await until(() => sixth.state.ended, 10_000, 10);
    expect(refusal(sixth)).toMatch(/already serves 5 event streams.*"workqCode":"UNAVAILABLE"/);
    // With room on the server, the SDK ends its iteration on the per-token refusal instead of trying again and again.
    b[0]?.close();
    const sdk = createClient({ url: server.url, jobs: catalog, token: TOKEN_A });
    const iterate = async () => {
      for await (const _ of sdk.events('bigReport')) {
        // nothing arrives before the refusal
      }
    };
    await expect(iterate()).rejects.toMatchObject({ code: 'FORBIDDEN' });
    // A stream closed frees its token's place.
    a[0]?.close();
    await until(
      async () => {
        const again = open('bigReport', TOKEN_A);
        await until(() => subscribed(again) || again.state.ended, 10_000, 10);
        return subscribed(again);
      },
      10_000,
      50,
    );
  });

  it('ends the stream of a signed token with UNAUTHORIZED when the token expires', async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs: catalog,
      tokenSecret: SECRET,
      logger: collectingLogger(),
    });
    const token = await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 1_500 });
    const stream = open('bigReport', token);
    await until(() => subscribed(stream), 10_000, 10);
    const startedAt = Date.now();
    await until(() => stream.state.ended || refusal(stream) !== '', 10_000, 20);
    expect(Date.now() - startedAt).toBeLessThan(4_000);
    expect(refusal(stream)).toMatch(/expired.*"workqCode":"UNAUTHORIZED"/);
  });

  it('the SDK reconnects with a fresh token from its token function, and stops when the token stays expired', async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs: catalog,
      tokenSecret: SECRET,
      logger: collectingLogger(),
    });
    const url = server.url;
    const admin = createClient({
      url,
      jobs: catalog,
      token: await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 60_000 }),
    });
    await admin.ready();
    let minted = 0;
    const fresh = createClient({
      url,
      jobs: catalog,
      token: () => {
        minted += 1;
        return mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 1_500 });
      },
    });
    const controller = new AbortController();
    const seen: string[] = [];
    const watching = (async () => {
      for await (const event of fresh.events('bigReport', { signal: controller.signal })) {
        if (event.type === 'enqueued') seen.push(event.id);
      }
    })();
    try {
      // Past the first token's expiry: the stream was ended, and opened again with a new token.
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      const handle = await admin.enqueue.bigReport({});
      await until(() => seen.includes(handle.id), 10_000, 20);
      expect(minted).toBeGreaterThanOrEqual(2);
    } finally {
      controller.abort();
      await watching;
    }
    // One token that outlives nothing: after its stream ends, one more try is refused at once, and the loop ends.
    const stale = await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 1_500 });
    let asked = 0;
    const staleClient = createClient({
      url,
      jobs: catalog,
      token: () => {
        asked += 1;
        return stale;
      },
    });
    const failure = await (async () => {
      try {
        for await (const _ of staleClient.events('bigReport')) {
          // none expected
        }
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(isWorkqError(failure) && failure.code).toBe('UNAUTHORIZED');
    expect(asked).toBeLessThanOrEqual(3);
  });
});
