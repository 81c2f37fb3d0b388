import { catalogJsonSchemas } from '@workq/core';
import { mintToken, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nowSeconds, signJwt } from '../support/jwt.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { failure, listAllJobs, type RawClient, rawClient, rawFailure } from '../support/raw-client.ts';

const SECRET = 'signed-tokens-e2e-secret-0123456789abcdef';
const OTHER_SECRET = 'another-deployment-secret-0123456789abcdef';
const ROOT = 'static-root-token-5b1c';
const image = { source: 'a.png', output: 'a.webp' };
const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

/** A fetch that counts the requests it sends. */
function countingFetch(): { fetch: typeof fetch; requests: () => number } {
  let requests = 0;
  const counting = ((input: RequestInfo | URL, init?: RequestInit) => {
    requests++;
    return fetch(input, init);
  }) as typeof fetch;
  return { fetch: counting, requests: () => requests };
}

/** Replaces a token's claims but keeps its header and signature, as someone raising their own scopes would. */
function withClaims(token: string, claims: Record<string, unknown>): string {
  const [header, , signature] = token.split('.');
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

/** Changes one character in the middle of the signature. */
function flipSignature(token: string): string {
  const at = token.lastIndexOf('.') + 10;
  return `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`;
}

describe('signed tokens (tokenSecret, mintToken) over pglite://memory', () => {
  let server: QueueServer;
  let admin: RawClient;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: [{ token: ROOT, scopes: ['admin'] }],
      tokenSecret: SECRET,
      logger: collectingLogger(),
    });
    admin = rawClient(server.url, ROOT);
    await admin.schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  });

  afterAll(async () => {
    await server?.close();
  });

  /** POSTs one job over plain HTTP; resolves to the status and parsed body. */
  const postJob = async (name: string, payload: unknown, token: string) => {
    const response = await fetch(`${server.url}/v1/jobs/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ version: 1, payload }),
    });
    return { status: response.status, body: (await response.json()) as { error?: { code: string; message: string } } };
  };

  it('lets a minted produce-only token enqueue that job, over tRPC and plain HTTP, and nothing else', async () => {
    const token = await mintToken({
      secret: SECRET,
      scopes: ['produce:imageConvert'],
      expiresInMs: 10 * 60_000,
      subject: 'user-42',
    });
    const browser = createClient({ url: server.url, jobs, token });
    const handle = await browser.enqueue.imageConvert(image);
    expect(handle.created).toBe(true);
    expect(await handle.status()).toMatchObject({ name: 'imageConvert', state: 'ready' });
    expect((await postJob('imageConvert', image, token)).status).toBe(201);

    expect(await failure(browser.enqueue.sendEmail(email))).toMatchObject({ code: 'FORBIDDEN' });
    expect(await postJob('sendEmail', email, token)).toMatchObject({
      status: 403,
      body: { error: { code: 'FORBIDDEN' } },
    });
    const raw = rawClient(server.url, token);
    const claim = raw.consumer.claim.mutate({ name: 'imageConvert', maxVersion: 2, limit: 1, workerId: 'w' });
    expect(await rawFailure(claim)).toMatchObject({ code: 'FORBIDDEN' });
    expect(await rawFailure(raw.admin.stats.query())).toMatchObject({ code: 'FORBIDDEN' });
    expect(await failure(browser.admin.stats())).toMatchObject({ code: 'FORBIDDEN' });
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(403);
    expect(await listAllJobs(admin, 'sendEmail')).toEqual([]);
  });

  const refusals: [string, () => Promise<string>, RegExp][] = [
    [
      'an expired token',
      async () => signJwt({ alg: 'HS256' }, { scope: 'produce:*', exp: nowSeconds() - 60 }, SECRET),
      /expired at .*new one/,
    ],
    [
      'a token whose claims were changed after signing',
      async () =>
        withClaims(await mintToken({ secret: SECRET, scopes: ['produce:sendEmail'], expiresInMs: 60_000 }), {
          scope: 'admin produce:*',
          exp: nowSeconds() + 600,
        }),
      /signature does not match/,
    ],
    [
      'a token with an altered signature',
      async () => flipSignature(await mintToken({ secret: SECRET, scopes: ['produce:*'], expiresInMs: 60_000 })),
      /signature does not match/,
    ],
    [
      'an unsigned token (alg none)',
      async () => signJwt({ alg: 'none' }, { scope: 'admin', exp: nowSeconds() + 600 }, SECRET),
      /algorithm this server does not accept; it accepts only HS256, HS384, HS512/,
    ],
    [
      'a token signed with another secret',
      async () => mintToken({ secret: OTHER_SECRET, scopes: ['produce:*'], expiresInMs: 60_000 }),
      /signed with another secret/,
    ],
    [
      'a token that is not valid yet (nbf in the future)',
      async () =>
        signJwt({ alg: 'HS256' }, { scope: 'produce:*', nbf: nowSeconds() + 3600, exp: nowSeconds() + 7200 }, SECRET),
      /not valid yet until .*clock/,
    ],
    ['a token without an expiry', async () => signJwt({ alg: 'HS256' }, { scope: 'produce:*' }, SECRET), /no expiry/],
    ['malformed garbage', async () => 'not-a-token.at all', /neither one of this server's tokens nor a well-formed/],
    ['three dotted segments of garbage', async () => 'eyJhbGci.bm9wZQ.c2ln', /neither one of this server's tokens/],
  ];

  it.each(refusals)('refuses %s as UNAUTHORIZED with a reason, never echoing it', async (_, make, reason) => {
    const token = await make();
    const before = (await listAllJobs(admin, 'sendEmail')).length;
    const refused = await failure(createClient({ url: server.url, jobs, token }).enqueue.sendEmail(email));
    expect(refused).toMatchObject({ code: 'UNAUTHORIZED' });
    expect(refused.message).toMatch(reason);
    expect(refused.message).not.toContain(token);

    const overHttp = await postJob('sendEmail', email, token);
    expect(overHttp).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHORIZED' } } });
    expect(overHttp.body.error?.message).toMatch(reason);
    expect(JSON.stringify(overHttp.body)).not.toContain(token);
    expect((await listAllJobs(admin, 'sendEmail')).length).toBe(before);
  });

  it('accepts HS384 and HS512 tokens signed with the secret', async () => {
    for (const alg of ['HS384', 'HS512']) {
      const token = signJwt({ alg }, { scope: 'produce:sendEmail', exp: nowSeconds() + 600 }, SECRET);
      expect((await postJob('sendEmail', email, token)).status).toBe(201);
    }
  });

  it('keeps static tokens working beside signed ones', async () => {
    await expect(admin.admin.stats.query()).resolves.toHaveProperty('counts');
    const root = createClient({ url: server.url, jobs, token: ROOT });
    expect(
      (await root.enqueue.generateReport({ accountId: 'acct-1', kind: 'usage', from: '2024-01-01', to: '2024-01-31' }))
        .created,
    ).toBe(true);
    expect(
      await failure(createClient({ url: server.url, jobs, token: 'static-but-unknown' }).admin.stats()),
    ).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('asks a token function for every request, sync or async, and follows what it returns', async () => {
    const emailToken = await mintToken({ secret: SECRET, scopes: ['produce:sendEmail'], expiresInMs: 60_000 });
    const imageToken = await mintToken({ secret: SECRET, scopes: ['produce:imageConvert'], expiresInMs: 60_000 });
    const expired = signJwt({ alg: 'HS256' }, { scope: 'produce:*', exp: nowSeconds() - 1 }, SECRET);

    for (const wrap of [(t: string) => t, (t: string) => Promise.resolve(t)]) {
      let current = emailToken;
      let calls = 0;
      const counting = countingFetch();
      const client = createClient({
        url: server.url,
        jobs,
        fetch: counting.fetch,
        token: () => {
          calls++;
          return wrap(current);
        },
      });
      expect((await client.enqueue.sendEmail(email)).created).toBe(true);
      expect(await failure(client.enqueue.imageConvert(image))).toMatchObject({ code: 'FORBIDDEN' });
      current = imageToken;
      expect((await client.enqueue.imageConvert(image)).created).toBe(true);
      current = expired;
      expect(await failure(client.enqueue.imageConvert(image))).toMatchObject({ code: 'UNAUTHORIZED' });
      current = imageToken;
      expect((await client.enqueue.imageConvert(image)).created).toBe(true);
      expect(counting.requests()).toBeGreaterThanOrEqual(5);
      expect(calls).toBe(counting.requests());
    }
  });

  it('fails a request whose token function throws or rejects as UNAUTHORIZED, sending nothing', async () => {
    const counting = countingFetch();
    const throwing = createClient({
      url: server.url,
      jobs,
      fetch: counting.fetch,
      token: () => {
        throw new Error('session ended');
      },
    });
    const thrown = await failure(throwing.enqueue.sendEmail(email));
    expect(thrown).toMatchObject({ code: 'UNAUTHORIZED', retryable: true });
    expect(thrown.message).toContain('session ended');
    const rejecting = createClient({
      url: server.url,
      jobs,
      fetch: counting.fetch,
      token: () => Promise.reject(new Error('token endpoint returned 502')),
    });
    expect(await failure(rejecting.enqueue.sendEmail(email))).toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringContaining('token endpoint returned 502'),
    });
    expect(counting.requests()).toBe(0);
  });
});

describe('a server with a token secret and no static tokens', () => {
  const servers: QueueServer[] = [];

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it('is not open: it requires a token, so it may bind a non-loopback address', async () => {
    const server = await startServer({
      store: 'pglite://memory',
      host: '0.0.0.0',
      port: 0,
      tokenSecret: SECRET,
      logger: collectingLogger(),
      // The catalog is registered at start: a produce-only token may use it, never register it.
      jobs,
    });
    servers.push(server);
    const url = `http://127.0.0.1:${server.port}`;
    const anonymous = await failure(createClient({ url, jobs }).enqueue.sendEmail(email));
    expect(anonymous).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/Missing bearer token/) });
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    const token = await mintToken({ secret: SECRET, scopes: ['produce:sendEmail'], expiresInMs: 60_000 });
    expect((await createClient({ url, jobs, token }).enqueue.sendEmail(email)).created).toBe(true);
  });

  it('refuses to start with a secret shorter than 32 bytes, without printing it', async () => {
    const short = 'too-short-secret';
    const refused = await failure(startServer({ store: 'pglite://memory', port: 0, tokenSecret: short }));
    expect(refused).toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/at least 32 bytes/) });
    expect(refused.message).not.toContain(short);
  });
});
