import { catalogJsonSchemas } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { email, hostileTarget, nasty, nastyJson, RUNS } from '../support/hostile-input.ts';
import { nowSeconds, signJwt } from '../support/jwt.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

/**
 * Signed tokens made by someone who holds the secret but not good intentions, or by someone who holds neither:
 * any header, any claims, any text. Each request answers `UNAUTHORIZED`, `FORBIDDEN` or a success, never a
 * server fault, and a success never goes beyond the scopes the token's `scope` claim lists.
 */
const SECRET = 'hostile-tokens-e2e-secret-0123456789abcdef';
const ROOT = 'static-root-token-hostile-5b1c';

/** Any value a claim may hold in JSON, at the edges too. */
const claimValue = fc.oneof(nastyJson, fc.constantFrom(2 ** 53, 2 ** 31, -1, 0, 1e308, 9e15, 8.64e15, 1.5));

/** Scope words, meant and not: real ones, near misses, and separators that are not a space. */
const scopeWord = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('produce:sendEmail', 'produce:*', 'admin', 'consume:*', 'register:*') },
  fc.constantFrom('Admin', 'produce:', 'produce:sendemail', 'produce:*:x', 'produce:sendEmail\u0000', '*', 'admin '),
  nasty,
);
const scopeClaim = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.array(scopeWord, { maxLength: 4 }), fc.constantFrom(' ', '  ', '\t', ',', '\n'))
      .map(([words, separator]) => words.join(separator)),
  },
  fc.array(scopeWord, { maxLength: 3 }),
  claimValue,
);
/** A NumericDate, or what someone might put in its place. */
const time = (around: number) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: -7_200, max: 7_200 }).map((delta) => around + delta) },
    fc.double(),
    claimValue,
  );
const claims = fc.record(
  {
    scope: scopeClaim,
    exp: time(nowSeconds() + 600),
    iat: time(nowSeconds()),
    nbf: time(nowSeconds() - 60),
    sub: claimValue,
    aud: claimValue,
    iss: claimValue,
    jti: claimValue,
  },
  { requiredKeys: ['scope', 'exp'] },
);
const header = fc.record(
  {
    alg: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('HS256', 'HS384', 'HS512') },
      fc.constantFrom('none', 'RS256', 'hs256', ''),
    ),
    typ: fc.oneof(fc.constant('JWT'), nasty),
    kid: nasty,
    crit: fc.array(fc.constantFrom('exp', 'b64', 'x'), { maxLength: 2 }),
    b64: fc.boolean(),
    jku: fc.constant('http://127.0.0.1:1/keys'),
  },
  { requiredKeys: ['alg'] },
);
/** A token: signed with the server's secret from any header and claims, or any text at all. */
const token = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .tuple(header, claims)
      .map(([h, c]) => ({ token: signJwt(h as { alg: string }, c, SECRET), scope: c.scope })),
  },
  fc.array(nasty, { minLength: 1, maxLength: 4 }).map((parts) => ({ token: parts.join('.'), scope: undefined })),
);

/** Whether the `scope` claim, read as the server reads it (space-separated words), lists one of `granting`. */
function lists(scope: unknown, granting: readonly string[]): boolean {
  return typeof scope === 'string' && scope.split(' ').some((word) => granting.includes(word));
}

describe('hostile signed tokens', () => {
  let server: QueueServer;
  const { send, expectClientAnswer, expectStillServing } = hostileTarget(() => server.url);

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: [
        { token: ROOT, scopes: ['admin'] },
        { token: 'prod-token-0123456789', scopes: ['produce:*'] },
      ],
      tokenSecret: SECRET,
      logger: collectingLogger(),
    });
    await rawClient(server.url, ROOT).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('answers any token with UNAUTHORIZED, FORBIDDEN or success, never beyond its scope claim', async () => {
    const body = JSON.stringify({ version: 1, payload: email });
    const calls = [
      { method: 'POST', path: '/v1/jobs/sendEmail', body, granting: ['produce:sendEmail', 'produce:*', 'admin'] },
      { method: 'GET', path: '/trpc/admin.stats', granting: ['admin'] },
      { method: 'GET', path: '/metrics', granting: ['admin'] },
    ];
    await fc.assert(
      fc.asyncProperty(token, fc.constantFrom(...calls), async (made, { granting, ...call }) => {
        const answer = await send({ ...call, contentType: 'application/json', token: made.token });
        const what = `${call.path} ${made.token.slice(0, 300)}`;
        expectClientAnswer(answer, what);
        if (answer && answer.status < 400) expect(lists(made.scope, granting), what).toBe(true);
        // A refusal never echoes the token (a short one may match any text by chance).
        if (answer && answer.status >= 400 && made.token.length >= 16)
          expect(answer.text, what).not.toContain(made.token);
      }),
      { numRuns: RUNS * 2 },
    );
    await expectStillServing();
  });
});
