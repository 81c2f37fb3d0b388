import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '../../packages/cli/src/admin/admin-cli.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawHttp } from '../support/raw-http.ts';

/** What a page at http://evil.example:4000 sends once it has rebound its name to 127.0.0.1. */
const REBOUND_HOST = 'evil.example:4000';
const FOREIGN_ORIGIN = 'https://evil.example.net';
const LISTED_ORIGIN = 'https://app.example.com';
const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

/** Every kind of path a page could aim at: tRPC (mutation, query, stream), plain HTTP, the dashboard, metrics. */
const PATHS = [
  {
    label: 'admin.pause',
    method: 'POST',
    path: '/trpc/admin.pause',
    body: JSON.stringify({ json: { name: 'imageConvert' } }),
  },
  { label: 'admin.queues (query)', method: 'GET', path: '/trpc/admin.queues' },
  {
    label: 'jobs.enqueue batch',
    method: 'POST',
    path: '/trpc/jobs.enqueue?batch=1',
    body: JSON.stringify({ 0: { json: { name: 'sendEmail', version: 1, payload: email } } }),
  },
  {
    label: 'REST enqueue',
    method: 'POST',
    path: '/v1/jobs/sendEmail',
    body: JSON.stringify({ version: 1, payload: email }),
  },
  { label: 'dashboard', method: 'GET', path: '/ui/' },
  { label: 'metrics', method: 'GET', path: '/metrics' },
  {
    label: 'event stream',
    method: 'GET',
    path: `/trpc/events.watch?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`,
  },
] as const;

describe('open mode (no tokens) answers only loopback names and its own pages', () => {
  let server: QueueServer;
  let withHosts: QueueServer;
  const logger = collectingLogger();

  beforeAll(async () => {
    server = await startServer({ store: 'pglite://memory', port: 0, jobs, cors: { origins: [LISTED_ORIGIN] }, logger });
    withHosts = await startServer({
      store: 'pglite://memory',
      port: 0,
      allowedHosts: ['workq.test'],
      logger: collectingLogger(),
    });
  });

  afterAll(async () => {
    await server?.close();
    await withHosts?.close();
  });

  const send = (target: { method: string; path: string; body?: string }, headers: Record<string, string>) =>
    rawHttp(server.url, {
      method: target.method,
      path: target.path,
      headers: { ...(target.body ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(target.body ? { body: target.body } : {}),
    });

  it.each(PATHS)('refuses a rebinding Host on $label with 421 and an actionable JSON error', async (target) => {
    const answer = await send(target, { host: REBOUND_HOST });
    expect(answer.status).toBe(421);
    expect(answer.json).toMatchObject({
      error: { code: 'FORBIDDEN', message: expect.stringMatching(/evil\.example:4000.*--allowed-host/) },
    });
  });

  it.each(PATHS)('refuses a foreign Origin on $label with 403', async (target) => {
    const host = new URL(server.url).host;
    const answer = await send(target, { host, origin: FOREIGN_ORIGIN });
    expect(answer.status).toBe(403);
    expect(answer.json).toMatchObject({
      error: { code: 'FORBIDDEN', message: expect.stringMatching(/evil\.example\.net.*--cors-origin/) },
    });
  });

  it('did not pause anything on those requests, and logged each refusal for the audit trail', async () => {
    const queues = await createClient({ url: server.url, jobs }).admin.queues();
    expect(queues.filter((queue) => queue.paused)).toEqual([]);
    const refusals = logger.lines.filter((line) => line.fields?.audit === 'auth-failure');
    expect(refusals.map((line) => line.fields?.reason)).toEqual(
      expect.arrayContaining(['host-not-allowed', 'origin-not-allowed']),
    );
    expect(refusals[0]?.fields).toMatchObject({ action: expect.any(String), remoteAddress: expect.any(String) });
  });

  it('answers the loopback names with any port, its own origin and a listed CORS origin', async () => {
    const port = new URL(server.url).port;
    const queues = { method: 'GET', path: '/trpc/admin.queues' } as const;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `127.1.2.3:${port}`, `[::1]:${port}`, 'localhost']) {
      expect((await send(queues, { host })).status, host).toBe(200);
    }
    const pause = PATHS[0];
    expect((await send(pause, { host: `localhost:${port}`, origin: `http://localhost:${port}` })).status).toBe(200);
    expect((await send(pause, { host: `127.0.0.1:${port}`, origin: LISTED_ORIGIN })).status).toBe(200);
    await createClient({ url: server.url, jobs }).admin.resume('imageConvert');
  });

  it('leaves the probes open to any Host: they tell only whether the server is up', async () => {
    expect((await rawHttp(server.url, { path: '/healthz', headers: { host: REBOUND_HOST } })).status).toBe(200);
    expect((await rawHttp(server.url, { path: '/readyz', headers: { host: REBOUND_HOST } })).status).toBe(200);
  });

  it('answers a host listed with allowedHosts, with any port', async () => {
    const answer = await rawHttp(withHosts.url, { path: '/trpc/admin.queues', headers: { host: 'workq.test:8080' } });
    expect(answer.status).toBe(200);
    const other = await rawHttp(withHosts.url, { path: '/trpc/admin.queues', headers: { host: 'evil.test' } });
    expect(other.status).toBe(421);
  });

  it('still serves the SDK (enqueue, consume) and the workq CLI on the loopback URL', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const handle = await sdk.enqueue.sendEmail(email);
    const worker = sdk.consume('sendEmail', async () => ({ messageId: 'm-1' }));
    try {
      await handle.result({ timeoutMs: 10_000 });
    } finally {
      await worker.close();
    }
    const out: string[] = [];
    const code = await runAdminCli(['queues', '--url', server.url, '--json'], {
      out: (text) => void out.push(text),
      err: () => undefined,
      env: {},
      untilInterrupted: () => new AbortController().signal,
    });
    expect(code).toBe(0);
    expect(out.join('')).toContain('sendEmail');
  });

  it('serves its own dashboard page, and the page its API, as same-origin requests', async () => {
    const port = new URL(server.url).port;
    const page = await rawHttp(server.url, { path: '/ui/', headers: { host: `127.0.0.1:${port}` } });
    expect([200, 404]).toContain(page.status);
    if (page.status === 404) expect(page.text).toContain('not built');
    // What the page's fetch sends: its own origin, on a POST.
    const call = await rawHttp(server.url, {
      method: 'POST',
      path: '/trpc/admin.checkPayload',
      headers: { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}`, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { name: 'sendEmail', version: 1, payload: email } }),
    });
    expect(call.status).toBe(200);
  });
});

describe('with tokens, Host is not checked: a page cannot send a token it does not hold', () => {
  it('serves a token holder whatever name it used', async () => {
    const server = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: [{ token: 'open-mode-e2e-admin-token', scopes: ['admin'] }],
      logger: collectingLogger(),
    });
    try {
      const answer = await rawHttp(server.url, {
        path: '/trpc/admin.queues',
        headers: { host: 'workq.internal:4000', authorization: 'Bearer open-mode-e2e-admin-token' },
      });
      expect(answer.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
