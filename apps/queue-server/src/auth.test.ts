import { describe, expect, it } from 'vitest';
import { parseTokenList, TokenAuthority } from './auth.ts';
import { isKnownScope } from './scopes.ts';
import { startServer } from './start-server.ts';

const LONG = 'a-static-token-of-24-chr';

/** The error `fn` throws, or undefined. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('isKnownScope', () => {
  it.each(['admin', 'produce:*', 'consume:imageConvert', 'register:report.v2', 'produce:a_b-c'])(
    'knows %s',
    (scope) => {
      expect(isKnownScope(scope)).toBe(true);
    },
  );

  it.each([
    'Admin',
    'ADMIN',
    'admin:*',
    'produce:a,b',
    'produce:',
    'consume:**',
    'consume:1job',
    'Produce:x',
    'produce:x y',
    'enqueue:x',
    'produce:x\n',
  ])('refuses %j', (scope) => {
    expect(isKnownScope(scope)).toBe(false);
  });
});

describe('static tokens are checked at construction', () => {
  it('accepts tokens of 16 characters or more with known scopes', () => {
    const authority = new TokenAuthority([
      { token: LONG, scopes: ['admin'] },
      { token: 'x'.repeat(16), scopes: ['produce:sendEmail', 'consume:*', 'register:sendEmail'] },
    ]);
    expect(authority.summary).toBe('2 token(s)');
  });

  it.each([
    ['Admin', 'Admin'],
    ['a typo', 'prodcue:*'],
    ['a comma inside one scope', 'produce:a,b'],
    ['an empty job name', 'consume:'],
  ])('refuses an unknown scope (%s) with VALIDATION naming the entry, not the token', (_, scope) => {
    const error = thrown(
      () =>
        new TokenAuthority([
          { token: LONG, scopes: ['admin'] },
          { token: `${LONG}-2`, scopes: ['produce:*', scope] },
        ]),
    );
    expect(error).toMatchObject({ code: 'VALIDATION' });
    const { message } = error as Error;
    expect(message).toContain('Static token 2 of 2');
    expect(message).toContain(JSON.stringify(scope));
    expect(message).not.toContain(LONG);
  });

  it.each(['root', 'x', 'fifteen-chars!!'])('refuses the short token %j without repeating it', (token) => {
    const error = thrown(() => new TokenAuthority([{ token, scopes: ['admin'] }]));
    expect(error).toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(/Static token 1 of 1 is too short.*at least 16 characters; it has \d+/),
    });
    expect((error as Error).message).not.toContain(token);
  });

  it('refuses a token without scopes', () => {
    expect(thrown(() => new TokenAuthority([{ token: LONG, scopes: [] }]))).toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(/Static token 1 of 1 has no scopes/),
    });
  });

  it('refuses a WORKQ_TOKENS entry whose scopes are a typo', () => {
    const grants = parseTokenList(`${LONG}=produce:*,Admin`);
    expect(thrown(() => new TokenAuthority(grants))).toMatchObject({ code: 'VALIDATION' });
  });

  it('refuses to start a server with a short token, before opening any store', async () => {
    await expect(
      startServer({ store: 'postgres://127.0.0.1:1/none', port: 0, tokens: [{ token: 'root', scopes: ['admin'] }] }),
    ).rejects.toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/too short/) });
  });
});
