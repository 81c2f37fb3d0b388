import { catalogJsonSchemas } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

const APP = 'https://app.example.com';
const ADMIN_UI = 'http://localhost:5173';
const STRANGER = 'https://evil.example.net';
const TOKEN = 'cors-e2e-token-0123456789';
const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

/** The routes a page may call: plain HTTP, and tRPC (single mutations, queries, batches). */
const ROUTES = {
  rest: { path: '/v1/jobs/sendEmail', body: JSON.stringify({ version: 1, payload: email }) },
  trpcMutation: {
    path: '/trpc/jobs.enqueue',
    body: JSON.stringify({ json: { name: 'sendEmail', version: 1, payload: email } }),
  },
  trpcBatch: {
    path: '/trpc/jobs.enqueue?batch=1',
    body: JSON.stringify({ 0: { json: { name: 'sendEmail', version: 1, payload: email } } }),
  },
} as const;

describe('CORS (cors.origins) over pglite://memory', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: [{ token: TOKEN, scopes: ['produce:*', 'consume:*', 'admin'] }],
      cors: { origins: [APP, `${ADMIN_UI}/`] },
      logger: collectingLogger(),
    });
    await rawClient(server.url, TOKEN).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  });

  afterAll(async () => {
    await server?.close();
  });

  const preflight = (path: string, origin: string) =>
    fetch(`${server.url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });

  const post = (path: string, body: string, origin: string, token: string | null = TOKEN) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body,
    });

  const corsHeaderNames = (response: Response) => {
    const names: string[] = [];
    response.headers.forEach((_, name) => {
      if (name.startsWith('access-control-')) names.push(name);
    });
    return names;
  };

  const varyOf = (response: Response) => (response.headers.get('vary') ?? '').split(/\s*,\s*/);

  it.each(Object.entries(ROUTES))('answers a preflight from a listed origin on %s', async (_, { path }) => {
    for (const origin of [APP, ADMIN_UI]) {
      const response = await preflight(path, origin);
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-allow-methods')?.split(/\s*,\s*/)).toEqual(
        expect.arrayContaining(['GET', 'POST']),
      );
      expect(response.headers.get('access-control-allow-headers')?.split(/\s*,\s*/)).toEqual(
        expect.arrayContaining(['authorization', 'content-type', 'trpc-accept']),
      );
      expect(Number(response.headers.get('access-control-max-age'))).toBeGreaterThan(0);
      expect(varyOf(response)).toContain('origin');
      expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  it.each(Object.entries(ROUTES))(
    'gives a preflight from another origin no CORS headers on %s',
    async (_, { path }) => {
      for (const origin of [STRANGER, 'null', `${APP}:8443`, 'http://app.example.com']) {
        const response = await preflight(path, origin);
        expect(response.status).toBe(403);
        expect(corsHeaderNames(response)).toEqual([]);
        expect(await response.text()).toMatch(/--cors-origin/);
      }
    },
  );

  it.each(Object.entries(ROUTES))('lets a listed origin read the answer to a POST on %s', async (_, { path, body }) => {
    const response = await post(path, body, APP);
    expect(response.status).toBe(path.startsWith('/v1/') ? 201 : 200);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
    expect(varyOf(response)).toContain('origin');
    if (path.startsWith('/trpc/')) expect(varyOf(response)).toEqual(expect.arrayContaining(['trpc-accept', 'accept']));
  });

  it.each(Object.entries(ROUTES))('lets a listed origin read an error (401) on %s', async (_, { path, body }) => {
    for (const token of [null, 'wrong-token']) {
      const response = await post(path, body, ADMIN_UI, token);
      expect(response.status).toBe(401);
      expect(response.headers.get('access-control-allow-origin')).toBe(ADMIN_UI);
      expect(varyOf(response)).toContain('origin');
      expect(await response.text()).toContain('UNAUTHORIZED');
    }
  });

  it.each(Object.entries(ROUTES))(
    'gives a POST from another origin no allow-origin on %s',
    async (_, { path, body }) => {
      const response = await post(path, body, STRANGER);
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
      expect(corsHeaderNames(response)).toEqual([]);
    },
  );

  it('answers tRPC queries (GET) and plain-HTTP errors to a listed origin', async () => {
    const query = await fetch(`${server.url}/trpc/admin.stats`, {
      headers: { origin: APP, authorization: `Bearer ${TOKEN}` },
    });
    expect(query.status).toBe(200);
    expect(query.headers.get('access-control-allow-origin')).toBe(APP);
    expect(varyOf(query)).toEqual(expect.arrayContaining(['origin', 'trpc-accept']));
    const notFound = await fetch(`${server.url}/v1/nope`, { method: 'POST', headers: { origin: APP } });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('sends no CORS headers to a request without an Origin', async () => {
    const sameOrigin = await fetch(`${server.url}${ROUTES.rest.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: ROUTES.rest.body,
    });
    expect(sameOrigin.status).toBe(201);
    expect(corsHeaderNames(sameOrigin)).toEqual([]);
    // Still marked as varying by origin, so a cache never serves it to a listed origin's page.
    expect(varyOf(sameOrigin)).toContain('origin');
  });
});

describe('CORS origins checked at start', () => {
  it.each([
    ['*', /"\*" is not accepted/],
    ['https://app.example.com/path', /not an origin/],
    ['app.example.com', /not an origin/],
    ['ftp://files.example.com', /not an origin/],
  ])('refuses %s with VALIDATION', async (origin, message) => {
    await expect(
      startServer({ store: 'pglite://memory', port: 0, cors: { origins: [origin] }, logger: collectingLogger() }),
    ).rejects.toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(message) });
  });
});
