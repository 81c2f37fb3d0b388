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
    expect(principal).toEqual({ scopes: new Set(['produce:sendEmail']), subject: 'u1' });
    expect(await authority.authenticate('bearer static-one-0123456789')).toEqual({ scopes: new Set(['admin']) });
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
});
