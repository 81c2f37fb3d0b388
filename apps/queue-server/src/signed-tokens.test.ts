import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { TokenAuthority } from './auth.ts';
import { mintToken } from './signed-tokens.ts';

const SECRET = 'unit-test-token-secret-0123456789abcdef';

describe('mintToken', () => {
  it('signs scope, exp, iat and sub with HS256', async () => {
    const before = Math.floor(Date.now() / 1000);
    const token = await mintToken({
      secret: SECRET,
      scopes: ['produce:imageConvert', 'consume:*'],
      expiresInMs: 10 * 60_000,
      subject: 'user-42',
    });
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'HS256', typ: 'JWT' });
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ scope: 'produce:imageConvert consume:*', sub: 'user-42' });
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    expect(claims.exp! - claims.iat!).toBeGreaterThanOrEqual(600);
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(601);
    expect(decodeJwt(await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 1 }))).not.toHaveProperty('sub');
  });

  it.each([
    ['a short secret', { secret: 'x'.repeat(31) }, /at least 32 bytes; this one has 31/],
    ['no secret', { secret: undefined as unknown as string }, /at least 32 bytes/],
    ['no scopes', { scopes: [] }, /at least one scope/],
    ['a scope that is not one', { scopes: ['produce-imageConvert'] }, /at least one scope, each/],
    ['a scope with a space', { scopes: ['produce:a b'] }, /at least one scope, each/],
    ['no lifetime', { expiresInMs: 0 }, /positive number of milliseconds/],
    ['an endless lifetime', { expiresInMs: Number.POSITIVE_INFINITY }, /positive number of milliseconds/],
  ])('refuses %s with VALIDATION', async (_, change, message) => {
    const options = { secret: SECRET, scopes: ['produce:*'], expiresInMs: 60_000, ...change };
    await expect(mintToken(options)).rejects.toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(message),
    });
  });
});

describe('TokenAuthority with a token secret', () => {
  const authority = new TokenAuthority([{ token: 'static-one-0123456789', scopes: ['admin'] }], SECRET);

  it('gives a signed token its scopes and subject, and a static token its own', async () => {
    const token = await mintToken({
      secret: SECRET,
      scopes: ['produce:sendEmail'],
      expiresInMs: 60_000,
      subject: 'u1',
    });
    const principal = await authority.authenticate(`Bearer ${token}`);
    expect(principal).toEqual({
      scopes: new Set(['produce:sendEmail']),
      subject: 'u1',
      expiresAtMs: decodeJwt(token).exp! * 1000,
      callerKey: 'subject:u1',
    });
    expect(await authority.authenticate('bearer static-one-0123456789')).toEqual({
      scopes: new Set(['admin']),
      callerKey: expect.stringMatching(/^token:[\w-]{43}$/),
    });
  });

  it('keys a signed token by its subject, so a new token for one subject is the same caller', async () => {
    const mint = (subject?: string, scopes = ['produce:*']) =>
      mintToken({ secret: SECRET, scopes, expiresInMs: 60_000, ...(subject ? { subject } : {}) });
    const keyOf = async (token: string) => (await authority.authenticate(`Bearer ${token}`)).callerKey;
    const [first, second, other] = await Promise.all([mint('u1'), mint('u1', ['produce:sendEmail']), mint('u2')]);
    expect(first).not.toBe(second);
    expect(await keyOf(second)).toBe(await keyOf(first));
    expect(await keyOf(other)).toBe('subject:u2');
    // Without a subject, each token is a caller of its own; no subject can pose as a token's hash.
    const [bare, bare2] = await Promise.all([mint(), mint(undefined, ['produce:sendEmail'])]);
    expect(await keyOf(bare)).toMatch(/^token:/);
    expect(await keyOf(bare)).not.toBe(await keyOf(bare2));
  });

  it('is never open, even without static tokens, and says how it authenticates', () => {
    const signedOnly = new TokenAuthority([], SECRET);
    expect(signedOnly.open).toBe(false);
    expect(signedOnly.summary).toBe('0 token(s) and signed tokens');
    expect(authority.summary).toBe('1 token(s) and signed tokens');
    expect(new TokenAuthority([]).summary).toMatch(/^open/);
  });

  it('refuses a short secret at construction, without repeating it', () => {
    const short = 'short-secret';
    let refused: unknown;
    try {
      new TokenAuthority([], short);
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ code: 'VALIDATION', message: expect.stringMatching(/at least 32 bytes/) });
    expect((refused as Error).message).not.toContain(short);
  });

  it('refuses a signed token with no scope claim', async () => {
    const token = await new SignJWT({ sub: 'u1' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('1m')
      .sign(new TextEncoder().encode(SECRET));
    await expect(authority.authenticate(`Bearer ${token}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringMatching(/carries no scopes/),
    });
  });

  it('refuses a token whose nbf or exp no date can hold as UNAUTHORIZED, saying why without the date', async () => {
    const key = new TextEncoder().encode(SECRET);
    const notYet = await new SignJWT({ scope: 'admin', nbf: 2 ** 53 })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('1m')
      .sign(key);
    await expect(authority.authenticate(`Bearer ${notYet}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      message: 'The bearer token is not valid yet: check the clock of the service that issued it.',
    });
    const expired = await new SignJWT({ scope: 'admin' })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(-(2 ** 53))
      .sign(key);
    await expect(authority.authenticate(`Bearer ${expired}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringMatching(/^The bearer token expired\. /),
    });
  });
});

/** A token signed with SECRET, with exactly these claims (times in seconds from now; `iat: null` leaves it out). */
async function signed(claims: { iat?: number | null; exp: number; aud?: string; iss?: string }): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const { iat = 0, exp, ...rest } = claims;
  const jwt = new SignJWT({ scope: 'produce:*', ...rest })
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime(now + exp);
  if (iat !== null) jwt.setIssuedAt(now + iat);
  return jwt.sign(new TextEncoder().encode(SECRET));
}

const HOUR = 3600;

describe('the lifetime of a signed token', () => {
  const authority = new TokenAuthority([], SECRET);

  it.each([
    [
      'iat now, exp in 25 h',
      { exp: 25 * HOUR },
      /valid for 25 h \(from its "iat" to its "exp"\), longer than this server's maximum of 24 h/,
    ],
    ['no iat, exp in 25 h', { iat: null, exp: 25 * HOUR }, /valid for 25 h \(it has no "iat"\)/],
    ['iat 23 h ago, exp in 2 h', { iat: -23 * HOUR, exp: 2 * HOUR }, /valid for 25 h/],
    ['iat in 10 h (future), exp 20 h after it', { iat: 10 * HOUR, exp: 30 * HOUR }, /valid for 30 h/],
    ['a year', { exp: 365 * 24 * HOUR }, /valid for 365 d/],
  ])('refuses by default (24 h) a token with %s, saying what to do', async (_, claims, message) => {
    await expect(authority.authenticate(`Bearer ${await signed(claims)}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringMatching(message),
    });
    await expect(authority.authenticate(`Bearer ${await signed(claims)}`)).rejects.toMatchObject({
      message: expect.stringMatching(/--max-token-lifetime.*Mint shorter-lived tokens/),
    });
  });

  it.each([
    ['iat now, exp in 24 h', { exp: 24 * HOUR }],
    ['no iat, exp in 23 h', { iat: null, exp: 23 * HOUR }],
    ['iat 20 h ago, exp in 4 h', { iat: -20 * HOUR, exp: 4 * HOUR }],
  ])('accepts a token with %s', async (_, claims) => {
    const principal = await authority.authenticate(`Bearer ${await signed(claims)}`);
    expect(principal.scopes).toEqual(new Set(['produce:*']));
  });

  it('accepts what mintToken makes for exactly the maximum, and refuses a second more', async () => {
    const short = new TokenAuthority([], SECRET, { maxLifetimeMs: 10 * 60_000 });
    const exact = await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 10 * 60_000 });
    expect((await short.authenticate(`Bearer ${exact}`)).expiresAtMs).toBe(decodeJwt(exact).exp! * 1000);
    const longer = await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 10 * 60_000 + 3_000 });
    await expect(short.authenticate(`Bearer ${longer}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringMatching(/maximum of 10 min/),
    });
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses maxLifetimeMs %s at construction',
    (maxLifetimeMs) => {
      expect(() => new TokenAuthority([], SECRET, { maxLifetimeMs })).toThrow(/maxTokenLifetimeMs must be a positive/);
    },
  );
});

describe('the audience and issuer of a signed token', () => {
  const authority = new TokenAuthority([], SECRET, { audience: 'workq', issuer: 'https://app.example.com' });
  const mint = (claims: { audience?: string; issuer?: string }) =>
    mintToken({ secret: SECRET, scopes: ['produce:*'], expiresInMs: 60_000, ...claims });

  it('mintToken writes aud and iss when given', async () => {
    expect(decodeJwt(await mint({ audience: 'workq', issuer: 'me' }))).toMatchObject({ aud: 'workq', iss: 'me' });
  });

  it('accepts a token for this audience from this issuer', async () => {
    const token = await mint({ audience: 'workq', issuer: 'https://app.example.com' });
    expect((await authority.authenticate(`Bearer ${token}`)).scopes).toEqual(new Set(['produce:*']));
  });

  it.each([
    ['no aud', { issuer: 'https://app.example.com' }, /"aud" claim must name "workq"/],
    ['another aud', { audience: 'billing', issuer: 'https://app.example.com' }, /"aud" claim must name "workq"/],
    ['no iss', { audience: 'workq' }, /"iss" claim must be "https:\/\/app.example.com"/],
    ['another iss', { audience: 'workq', issuer: 'https://evil.example' }, /"iss" claim must be/],
  ])('refuses a token with %s as UNAUTHORIZED', async (_, claims, message) => {
    await expect(authority.authenticate(`Bearer ${await mint(claims)}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      message: expect.stringMatching(message),
    });
  });

  it('checks neither when the server names neither', async () => {
    const lax = new TokenAuthority([], SECRET);
    const token = await mint({ audience: 'billing', issuer: 'someone' });
    expect((await lax.authenticate(`Bearer ${token}`)).scopes).toEqual(new Set(['produce:*']));
  });
});
