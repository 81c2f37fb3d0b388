import { createHmac } from 'node:crypto';

const HASH_OF = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' } as const;

const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * A JWT built by hand (not by the library the server verifies with), so tests
 * can make the tokens a real client would never mint: expired, not yet valid,
 * unsigned (`alg: none`), or signed with another secret.
 */
export function signJwt(
  header: { alg: string; typ?: string },
  claims: Record<string, unknown>,
  secret: string,
): string {
  const signingInput = `${part(header)}.${part(claims)}`;
  const hash = HASH_OF[header.alg as keyof typeof HASH_OF];
  const signature = hash ? createHmac(hash, secret).update(signingInput).digest('base64url') : '';
  return `${signingInput}.${signature}`;
}

/** Now, as a JWT NumericDate (seconds since the epoch). */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
