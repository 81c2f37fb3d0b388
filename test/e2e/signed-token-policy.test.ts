import { mintToken, type QueueServer, startServer } from '@workq/queue-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nowSeconds, signJwt } from '../support/jwt.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient, rawFailure } from '../support/raw-client.ts';

const SECRET = 'signed-token-policy-e2e-secret-0123456789';

describe('a server with a maximum token lifetime, an audience and an issuer', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokenSecret: SECRET,
      maxTokenLifetimeMs: 60 * 60_000,
      tokenAudience: 'workq',
      tokenIssuer: 'https://app.example.com',
      logger: collectingLogger(),
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  const stats = (token: string) => rawClient(server.url, token).admin.stats.query();
  const mint = (expiresInMs: number, claims: { audience?: string; issuer?: string }) =>
    mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs, ...claims });
  const ours = { audience: 'workq', issuer: 'https://app.example.com' };

  it('accepts a token within the lifetime, for its audience, from its issuer', async () => {
    await expect(stats(await mint(30 * 60_000, ours))).resolves.toBeDefined();
  });

  it('refuses a token valid for longer than maxTokenLifetimeMs, saying so', async () => {
    const failure = await rawFailure(stats(await mint(2 * 60 * 60_000, ours)));
    expect(failure).toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringMatching(/valid for 2 h .*maximum of 1 h/),
    });
  });

  it('refuses a hand-made token with no iat that expires in a year', async () => {
    const token = signJwt(
      { alg: 'HS256' },
      { scope: 'admin', exp: nowSeconds() + 365 * 86_400, aud: 'workq', iss: 'https://app.example.com' },
      SECRET,
    );
    expect(await rawFailure(stats(token))).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it.each([
    ['no audience', { issuer: ours.issuer }, /"aud"/],
    ['another audience', { audience: 'billing', issuer: ours.issuer }, /"aud"/],
    ['no issuer', { audience: ours.audience }, /"iss"/],
    ['another issuer', { audience: ours.audience, issuer: 'https://evil.example' }, /"iss"/],
  ])('refuses a token with %s', async (_, claims, message) => {
    const failure = await rawFailure(stats(await mint(60_000, claims)));
    expect(failure).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(message) });
  });
});

describe('a server with default signed-token settings', () => {
  it('refuses a token valid for more than 24 hours', async () => {
    const server = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokenSecret: SECRET,
      logger: collectingLogger(),
    });
    try {
      const stats = (token: string) => rawClient(server.url, token).admin.stats.query();
      const day = 24 * 60 * 60_000;
      await expect(
        stats(await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: day })),
      ).resolves.toBeDefined();
      const week = await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 7 * day });
      expect(await rawFailure(stats(week))).toMatchObject({
        code: 'UNAUTHORIZED',
        message: expect.stringMatching(/valid for 7 d .*maximum of 24 h/),
      });
    } finally {
      await server.close();
    }
  });
});
