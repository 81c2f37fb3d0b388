import { WorkqError } from '@workq/core';
import { errors, jwtVerify, SignJWT } from 'jose';
import { isKnownScope } from './scopes.ts';

/** The algorithms a signed token may be signed with: HMAC only, never `none`. `mintToken` signs with HS256. */
export const SIGNED_TOKEN_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;

/** The shortest token secret accepted, in bytes of its UTF-8 text. */
export const MIN_TOKEN_SECRET_BYTES = 32;

/** The longest a signed token may be valid, from its `iat` (or from now) to its `exp`, unless the server says otherwise: 24 h. */
export const DEFAULT_MAX_TOKEN_LIFETIME_MS = 24 * 60 * 60_000;

/** What a server asks of a signed token beyond its signature and expiry. */
export interface SignedTokenPolicy {
  /**
   * The longest a token may be valid: a token whose `exp` lies further than
   * this past its `iat` (or past now, when it has none or one in the future)
   * is refused, whatever its signature, so a leaked token never outlives it.
   * Checked in whole seconds, as JWT times are, with one second of allowance
   * for the rounding of `iat` down and `exp` up.
   * @defaultValue DEFAULT_MAX_TOKEN_LIFETIME_MS (24 h)
   */
  maxLifetimeMs?: number;
  /** The `aud` claim a token must carry (one of its values, when it lists several). @defaultValue none: `aud` is not checked */
  audience?: string;
  /** The `iss` claim a token must carry. @defaultValue none: `iss` is not checked */
  issuer?: string;
}

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
  subject?: string | undefined;
  /** Whom the token is for (its `aud` claim), e.g. `"workq"`; needed by a server started with that `tokenAudience`. @defaultValue none */
  audience?: string | undefined;
  /** Who issued the token (its `iss` claim), e.g. `"https://app.example.com"`; needed by a server started with that `tokenIssuer`. @defaultValue none */
  issuer?: string | undefined;
}

/** What a verified signed token grants. */
export interface VerifiedToken {
  scopes: readonly string[];
  subject: string | undefined;
  /** When the token expires (its `exp`), in milliseconds since the epoch: what it grants ends then, open event streams included. */
  expiresAtMs: number;
}

/**
 * Makes a short-lived signed token (a JWT, HS256) that a queue server started
 * with the same `tokenSecret` accepts, e.g. so an app's backend can hand its
 * browser a token scoped to `produce:imageConvert` for ten minutes. Claims:
 * `scope` (the scopes, space-separated, as in RFC 8693), `exp`, `iat` and,
 * when given, `sub`, `aud` and `iss`. A server refuses a token valid for
 * longer than its `maxTokenLifetimeMs` (24 h unless configured otherwise).
 */
export async function mintToken(options: MintTokenOptions): Promise<string> {
  const key = tokenSecretKey(options.secret);
  const { scopes, expiresInMs, subject, audience, issuer } = options;
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
  if (audience !== undefined) jwt.setAudience(audience);
  if (issuer !== undefined) jwt.setIssuer(issuer);
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
 * `exp` and any `nbf`, its lifetime and, when the policy names them, its
 * `aud` and `iss`; then reads its `scope` and `sub`. Every refusal is
 * `UNAUTHORIZED` with a reason a person can act on; none repeats the token.
 */
export async function verifySignedToken(
  token: string,
  key: Uint8Array,
  policy: SignedTokenPolicy = {},
): Promise<VerifiedToken> {
  const { audience, issuer, maxLifetimeMs = DEFAULT_MAX_TOKEN_LIFETIME_MS } = policy;
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: [...SIGNED_TOKEN_ALGORITHMS],
      requiredClaims: ['exp'],
      ...(audience === undefined ? {} : { audience }),
      ...(issuer === undefined ? {} : { issuer }),
    }));
  } catch (error) {
    throw new WorkqError('UNAUTHORIZED', refusal(error, policy), { cause: error });
  }
  const exp = payload.exp as number;
  const nowSeconds = Math.floor(Date.now() / 1000);
  const iat = typeof payload.iat === 'number' ? payload.iat : nowSeconds;
  const lifetimeSeconds = exp - Math.min(iat, nowSeconds);
  if (lifetimeSeconds > Math.ceil(maxLifetimeMs / 1000) + 1) {
    throw new WorkqError(
      'UNAUTHORIZED',
      `The signed bearer token is valid for ${duration(lifetimeSeconds * 1000)}${typeof payload.iat === 'number' ? ' (from its "iat" to its "exp")' : ' (it has no "iat")'}, longer than this server's maximum of ${duration(maxLifetimeMs)} (maxTokenLifetimeMs, --max-token-lifetime, WORKQ_MAX_TOKEN_LIFETIME). Mint shorter-lived tokens (mintToken's expiresInMs) and a new one when it expires.`,
    );
  }
  const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
  if (scopes.length === 0) {
    throw new WorkqError(
      'UNAUTHORIZED',
      'The signed bearer token carries no scopes: its "scope" claim must list them space-separated, e.g. "produce:imageConvert". Mint it with mintToken.',
    );
  }
  return { scopes, subject: typeof payload.sub === 'string' ? payload.sub : undefined, expiresAtMs: exp * 1000 };
}

/** A span for a person, to a tenth of its unit: `90 s`, `10 min`, `24 h`, `7 d`. */
function duration(ms: number): string {
  const [unit, size] =
    ms >= 2 * 86_400_000
      ? ['d', 86_400_000]
      : ms >= 3_600_000
        ? ['h', 3_600_000]
        : ms >= 60_000
          ? ['min', 60_000]
          : ['s', 1000];
  return `${Math.round((ms / size) * 10) / 10} ${unit}`;
}

const NEW_TOKEN = 'Ask the service that issued it for a new one.';

function refusal(error: unknown, policy: SignedTokenPolicy): string {
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
    if (error.claim === 'aud' && policy.audience !== undefined) {
      return `The signed bearer token is not meant for this server: its "aud" claim must name "${policy.audience}" (mintToken's audience). ${NEW_TOKEN}`;
    }
    if (error.claim === 'iss' && policy.issuer !== undefined) {
      return `The signed bearer token was not issued by whom this server trusts: its "iss" claim must be "${policy.issuer}" (mintToken's issuer). ${NEW_TOKEN}`;
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
  // A claim is whatever the token says: a number past the range of dates is left out of the message.
  const date = typeof seconds === 'number' ? new Date(seconds * 1000) : undefined;
  return date && !Number.isNaN(date.getTime()) ? `${word} ${date.toISOString()}` : '';
}
