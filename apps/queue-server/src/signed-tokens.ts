import { WorkqError } from '@workq/core';
import { errors, jwtVerify, SignJWT } from 'jose';
import { isKnownScope } from './scopes.ts';

/** The algorithms a signed token may be signed with: HMAC only, never `none`. `mintToken` signs with HS256. */
export const SIGNED_TOKEN_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;

/** The shortest token secret accepted, in bytes of its UTF-8 text. */
export const MIN_TOKEN_SECRET_BYTES = 32;

export interface MintTokenOptions {
  /** The queue server's `tokenSecret` (`WORKQ_TOKEN_SECRET`), at least 32 bytes. */
  secret: string;
  /** What the token may do, as for static tokens: `produce:<job|*>`, `consume:<job|*>`, `register:<job|*>`, `admin`. At least one. */
  scopes: readonly string[];
  /** How long the token is valid from now, in milliseconds (its `exp`, rounded up to a whole second). */
  expiresInMs: number;
  /**
   * Who the token was given to (its `sub` claim), e.g. your user's id: the
   * server keeps it with the caller and names it in its request-failure logs.
   * @defaultValue none
   */
  subject?: string;
}

/** What a verified signed token grants. */
export interface VerifiedToken {
  scopes: readonly string[];
  subject: string | undefined;
}

/**
 * Makes a short-lived signed token (a JWT, HS256) that a queue server started
 * with the same `tokenSecret` accepts, e.g. so an app's backend can hand its
 * browser a token scoped to `produce:imageConvert` for ten minutes. Claims:
 * `scope` (the scopes, space-separated, as in RFC 8693), `exp`, `iat` and,
 * with `subject`, `sub`.
 */
export async function mintToken(options: MintTokenOptions): Promise<string> {
  const key = tokenSecretKey(options.secret);
  const { scopes, expiresInMs, subject } = options;
  if (!Array.isArray(scopes) || scopes.length === 0 || !scopes.every(isKnownScope)) {
    throw new WorkqError(
      'VALIDATION',
      'mintToken needs at least one scope, each "produce:<job|*>", "consume:<job|*>", "register:<job|*>" or "admin", e.g. ["produce:imageConvert"].',
    );
  }
  if (!Number.isFinite(expiresInMs) || expiresInMs <= 0) {
    throw new WorkqError('VALIDATION', 'mintToken needs expiresInMs, a positive number of milliseconds.');
  }
  const nowMs = Date.now();
  const jwt = new SignJWT({ scope: scopes.join(' ') })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt(Math.floor(nowMs / 1000))
    .setExpirationTime(Math.ceil((nowMs + expiresInMs) / 1000));
  if (subject !== undefined) jwt.setSubject(subject);
  return jwt.sign(key);
}

/** The secret as a signing key; `VALIDATION` when it is missing or shorter than 32 bytes. Never includes the secret. */
export function tokenSecretKey(secret: string): Uint8Array {
  const key = typeof secret === 'string' ? new TextEncoder().encode(secret) : undefined;
  if (key === undefined || key.length < MIN_TOKEN_SECRET_BYTES) {
    throw new WorkqError(
      'VALIDATION',
      `The token secret must be at least ${MIN_TOKEN_SECRET_BYTES} bytes${key ? `; this one has ${key.length}` : ''}. Generate one with "openssl rand -base64 48" and give the same secret to the server (WORKQ_TOKEN_SECRET / --token-secret) and to mintToken.`,
    );
  }
  return key;
}

/**
 * Verifies a signed token's signature (HS256/384/512 only), its required
 * `exp` and any `nbf`, and reads its `scope` and `sub`. Every refusal is
 * `UNAUTHORIZED` with a reason a person can act on; none repeats the token.
 */
export async function verifySignedToken(token: string, key: Uint8Array): Promise<VerifiedToken> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key, { algorithms: [...SIGNED_TOKEN_ALGORITHMS], requiredClaims: ['exp'] }));
  } catch (error) {
    throw new WorkqError('UNAUTHORIZED', refusal(error), { cause: error });
  }
  const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
  if (scopes.length === 0) {
    throw new WorkqError(
      'UNAUTHORIZED',
      'The signed bearer token carries no scopes: its "scope" claim must list them space-separated, e.g. "produce:imageConvert". Mint it with mintToken.',
    );
  }
  return { scopes, subject: typeof payload.sub === 'string' ? payload.sub : undefined };
}

const NEW_TOKEN = 'Ask the service that issued it for a new one.';

function refusal(error: unknown): string {
  if (error instanceof errors.JWTExpired) {
    return `The bearer token expired${at(error.payload.exp)}. ${NEW_TOKEN}`;
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf' && error.reason === 'check_failed') {
      return `The bearer token is not valid yet${at(error.payload.nbf, ' until')}: check the clock of the service that issued it.`;
    }
    if (error.claim === 'exp' && error.reason === 'missing') {
      return `The signed bearer token has no expiry ("exp" claim); this server accepts only tokens that expire. Mint it with mintToken.`;
    }
    return `The signed bearer token's "${error.claim}" claim is not valid. ${NEW_TOKEN}`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return `The signed bearer token uses an algorithm this server does not accept; it accepts only ${SIGNED_TOKEN_ALGORITHMS.join(', ')}.`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return `The bearer token's signature does not match this server's token secret: it was altered, or signed with another secret. ${NEW_TOKEN}`;
  }
  return 'The bearer token is neither one of this server\'s tokens nor a well-formed signed token (JWT). Send "Authorization: Bearer <token>".';
}

/** ` at <ISO time>` for a NumericDate claim, or nothing when it is not a usable number. */
function at(seconds: unknown, word = ' at'): string {
  return typeof seconds === 'number' && Number.isFinite(seconds)
    ? `${word} ${new Date(seconds * 1000).toISOString()}`
    : '';
}
