import type { Socket } from 'node:net';
import { DEFAULT_LIMITS, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type JobEvent } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { openSocket } from '../support/raw-http.ts';

const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

/** The JSON body of a raw HTTP/1.1 answer. */
function bodyOf(received: string): unknown {
  return JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4));
}

/** Writes `text` one character every `everyMs` until the socket closes or `text` ends. */
async function trickle(socket: Socket, text: string, everyMs: number): Promise<void> {
  for (const char of text) {
    if (socket.destroyed) return;
    socket.write(char);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

describe('HTTP server limits', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs,
      limits: { headersTimeoutMs: 500, requestTimeoutMs: 1_000, maxLongPollMs: 3_000 },
      logger: collectingLogger(),
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('has documented defaults: 10 s for headers, 30 s for a request, 65 s idle, 10,000 connections', () => {
    expect(DEFAULT_LIMITS).toMatchObject({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 65_000,
      maxConnections: 10_000,
    });
  });

  it('cuts a client that trickles its headers, within a second of headersTimeoutMs', async () => {
    const { socket, closed, connected } = openSocket(server.url);
    await connected;
    void trickle(socket, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${'a'.repeat(200)}\r\n\r\n`, 50);
    const afterMs = await closed;
    expect(afterMs).toBeGreaterThanOrEqual(450);
    expect(afterMs).toBeLessThan(2_000);
  });

  it('cuts a body trickled a byte at a time (unauthenticated), within a second of requestTimeoutMs', async () => {
    const { socket, state, closed, connected } = openSocket(server.url);
    await connected;
    const body = JSON.stringify({ version: 1, payload: email }).padEnd(400, ' ');
    socket.write(
      `POST /v1/jobs/sendEmail HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    void trickle(socket, body, 50);
    const afterMs = await closed;
    expect(afterMs).toBeGreaterThanOrEqual(950);
    expect(afterMs).toBeLessThan(2_500);
    expect(state.received).toMatch(/^HTTP\/1\.1 408/);
    expect(bodyOf(state.received)).toMatchObject({ error: { code: 'TIMEOUT' } });
  });

  it('answers a request the HTTP parser refuses with a workq error, and goes on serving', async () => {
    const cases = [
      { header: 'Authorization: Bearer \u0001', status: 400, code: 'VALIDATION', names: 'HPE_INVALID_HEADER_TOKEN' },
      { header: 'Authorization: Bearer a\u007fb', status: 400, code: 'VALIDATION', names: 'HPE_INVALID_HEADER_TOKEN' },
      { header: 'Bad Name: x', status: 400, code: 'VALIDATION', names: 'HPE_INVALID_HEADER_TOKEN' },
      { header: `X-Big: ${'a'.repeat(20_000)}`, status: 431, code: 'PAYLOAD_TOO_LARGE', names: 'header' },
    ];
    for (const { header, status, code, names } of cases) {
      const { socket, state, closed, connected } = openSocket(server.url);
      await connected;
      socket.write(`GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n${header}\r\n\r\n`);
      await closed;
      expect(state.received, header.slice(0, 40)).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(state.received).toMatch(/\r\ncontent-type: application\/json\r\n/);
      const { error } = bodyOf(state.received) as { error: { code: string; message: string } };
      expect(error.code).toBe(code);
      expect(error.message).toContain(names);
    }
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it('lets a long poll wait past requestTimeoutMs: it bounds receiving the request, not the answer', async () => {
    const startedAt = performance.now();
    const claimed = await rawClient(server.url).consumer.claim.mutate({
      name: 'imageConvert',
      maxVersion: 2,
      limit: 1,
      workerId: 'http-limits-poller',
      waitMs: 2_500,
    });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(2_000);
    expect(claimed).toMatchObject({ jobs: [] });
  });

  it('keeps an event stream open past requestTimeoutMs, delivering what happens later', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const controller = new AbortController();
    const seen: JobEvent<typeof jobs>[] = [];
    const reading = (async () => {
      for await (const event of sdk.events('sendEmail', { signal: controller.signal })) {
        if (event.type !== 'resync') seen.push(event);
      }
    })().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const handle = await sdk.enqueue.sendEmail(email);
    const deadline = Date.now() + 5_000;
    while (!seen.some((event) => event.id === handle.id) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    controller.abort();
    await reading;
    expect(seen.map((event) => [event.id, event.type])).toContainEqual([handle.id, 'enqueued']);
  });

  it('refuses headers allowed longer than the whole request at start (VALIDATION)', async () => {
    await expect(
      startServer({ store: 'pglite://memory', port: 0, limits: { headersTimeoutMs: 5_000, requestTimeoutMs: 1_000 } }),
    ).rejects.toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('headersTimeoutMs') });
  });
});

describe('the connection cap (limits.maxConnections)', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      limits: { maxConnections: 4 },
      logger: collectingLogger(),
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('closes connections past the cap as they arrive, and goes on serving those it holds', async () => {
    const held = Array.from({ length: 4 }, () => openSocket(server.url));
    await Promise.all(held.map((connection) => connection.connected));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const extra = openSocket(server.url);
    extra.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expect(await extra.closed).toBeLessThan(1_000);
    expect(extra.state.received).toBe('');

    const [first] = held;
    first?.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const deadline = Date.now() + 2_000;
    while (!first?.state.received.includes('"ok":true') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(first?.state.received).toMatch(/^HTTP\/1\.1 200/);

    for (const connection of held) connection.socket.destroy();
    await Promise.all(held.map((connection) => connection.closed));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
