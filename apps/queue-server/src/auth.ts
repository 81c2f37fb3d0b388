import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { WorkqError } from '@workq/core';
import type { StopScope } from '@workq/core/engine';
import type { TokenGrant } from './options.ts';
import { isKnownScope, type ScopeKind } from './scopes.ts';
import { type SignedTokenPolicy, tokenSecretKey, verifySignedToken } from './signed-tokens.ts';

/** Who is calling, as far as the server can tell. */
export interface Principal {
  /** `null` when the server runs open (no tokens configured, loopback only). */
  scopes: ReadonlySet<string> | null;
  /** The `sub` claim of a signed token that names one; static tokens have none. */
  subject?: string;
  /**
   * When a signed token's grant ends (its `exp`), in milliseconds since the
   * epoch; what outlasts one request, an event stream, ends then. Static
   * tokens have none.
   */
  expiresAtMs?: number;
  /**
   * Names the caller without revealing its token, for limits counted per
   * caller (open event streams, the share of the request-body budget): a
   * signed token's subject when it has one, so minting a new token does not
   * buy a new share; else a hash of the token. None in open mode.
   */
  callerKey?: string;
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** The shortest static token accepted, in characters: a guessable token is no token. */
export const MIN_STATIC_TOKEN_LENGTH = 16;

/**
 * Checks the static tokens, so a typo refuses the start instead of silently
 * granting less (or nothing): each is at least 16 characters and carries at
 * least one scope, every one known (`isKnownScope`). `VALIDATION` naming the
 * entry by its position and the offending scope; never the token itself.
 */
export function checkTokenGrants(grants: readonly TokenGrant[]): void {
  grants.forEach((grant, index) => {
    const entry = `Static token ${index + 1} of ${grants.length}`;
    const token: unknown = grant?.token;
    if (typeof token !== 'string' || token.length < MIN_STATIC_TOKEN_LENGTH) {
      const length = typeof token === 'string' ? `; it has ${token.length}` : '';
      throw new WorkqError(
        'VALIDATION',
        `${entry} is too short to be a secret: use at least ${MIN_STATIC_TOKEN_LENGTH} characters${length}, e.g. one made with "openssl rand -base64 24".`,
      );
    }
    const scopes: unknown = grant.scopes;
    if (!Array.isArray(scopes) || scopes.length === 0) {
      throw new WorkqError('VALIDATION', `${entry} has no scopes: give it at least one, e.g. "produce:*".`);
    }
    const unknown = scopes.find((scope) => typeof scope !== 'string' || !isKnownScope(scope));
    if (unknown !== undefined) {
      throw new WorkqError(
        'VALIDATION',
        `${entry} has the unknown scope ${JSON.stringify(String(unknown)).slice(0, 120)}: each scope is "admin", "produce:<job|*>", "consume:<job|*>" or "register:<job|*>", with a job name of letters, digits, "_", "-" or "." starting with a letter (scopes are case-sensitive; separate several with ",").`,
      );
    }
  });
}

/**
 * Matches bearer tokens against the static tokens in constant time and, with
 * a token secret, verifies signed tokens (`signed-tokens.ts`); never logs or
 * returns a token.
 */
export class TokenAuthority {
  private readonly grants: { digest: Buffer; scopes: ReadonlySet<string> }[];
  private readonly signingKey: Uint8Array | undefined;

  /**
   * `VALIDATION` when a static token fails `checkTokenGrants`, the token
   * secret is shorter than 32 bytes or the policy's lifetime is not a
   * positive number of milliseconds.
   */
  constructor(
    grants: readonly TokenGrant[],
    tokenSecret?: string,
    private readonly policy: SignedTokenPolicy = {},
  ) {
    checkTokenGrants(grants);
    const { maxLifetimeMs } = policy;
    if (maxLifetimeMs !== undefined && !(Number.isFinite(maxLifetimeMs) && maxLifetimeMs > 0)) {
      throw new WorkqError(
        'VALIDATION',
        `maxTokenLifetimeMs must be a positive number of milliseconds (--max-token-lifetime 24h); got ${String(maxLifetimeMs)}.`,
      );
    }
    this.grants = grants.map((grant) => ({ digest: digest(grant.token), scopes: new Set(grant.scopes) }));
    this.signingKey = tokenSecret === undefined ? undefined : tokenSecretKey(tokenSecret);
  }

  /** Whether every caller is let in: no static tokens and no token secret. */
  get open(): boolean {
    return this.grants.length === 0 && this.signingKey === undefined;
  }

  /** How callers are authenticated, for the start-up log (no token or secret in it). */
  get summary(): string {
    if (this.open) return 'open (loopback only, no tokens configured)';
    const signed = this.signingKey ? ' and signed tokens' : '';
    return `${this.grants.length} token(s)${signed}`;
  }

  /** The principal for an `Authorization` header value; `UNAUTHORIZED` when a token is required and missing or wrong. */
  async authenticate(header: string | undefined): Promise<Principal> {
    if (this.open) return { scopes: null };
    const token = /^Bearer\s+(.+)$/i.exec(header ?? '')?.[1]?.trim();
    if (!token) {
      throw new WorkqError('UNAUTHORIZED', 'Missing bearer token: send "Authorization: Bearer <token>".');
    }
    const presented = digest(token);
    let match: ReadonlySet<string> | undefined;
    for (const grant of this.grants) {
      if (timingSafeEqual(grant.digest, presented)) match = grant.scopes;
    }
    if (match) return { scopes: match, callerKey: `token:${presented.toString('base64url')}` };
    if (!this.signingKey) throw new WorkqError('UNAUTHORIZED', 'The bearer token is not valid for this server.');
    const verified = await verifySignedToken(token, this.signingKey, this.policy);
    const callerKey =
      verified.subject === undefined ? `token:${presented.toString('base64url')}` : `subject:${verified.subject}`;
    return {
      scopes: new Set(verified.scopes),
      subject: verified.subject,
      expiresAtMs: verified.expiresAtMs,
      callerKey,
    };
  }
}

export function hasScope(principal: Principal, kind: ScopeKind | 'admin', name?: string): boolean {
  const scopes = principal.scopes;
  if (scopes === null || scopes.has('admin')) return true;
  if (kind === 'admin') return false;
  return scopes.has(`${kind}:*`) || (name !== undefined && scopes.has(`${kind}:${name}`));
}

/** Whether the principal holds any of `kinds` for job type `name`. */
export function hasAnyScope(principal: Principal, kinds: readonly ScopeKind[], name: string): boolean {
  return kinds.some((kind) => hasScope(principal, kind, name));
}

/** `FORBIDDEN` unless the principal may read jobs of type `name`: it may produce or consume them. */
export function requireReadScope(principal: Principal, name: string): void {
  if (!hasAnyScope(principal, ['produce', 'consume'], name)) {
    throw new WorkqError('FORBIDDEN', `This token may not read jobs of type "${name}".`);
  }
}

/** The same stop scope for every request of one token, so a worker's stop marks stay one per caller. */
const stopScopes = new WeakMap<ReadonlySet<string>, StopScope>();
const OPEN_STOP_SCOPE: StopScope = { covers: () => true };

/** What a caller may stop waiting: claims of the job types its token may consume. */
export function stopScopeOf(principal: Principal): StopScope {
  const scopes = principal.scopes;
  if (scopes === null) return OPEN_STOP_SCOPE;
  let scope = stopScopes.get(scopes);
  if (!scope) {
    scope = { covers: (jobName) => hasScope({ scopes }, 'consume', jobName) };
    stopScopes.set(scopes, scope);
  }
  return scope;
}

export function requireScope(principal: Principal, kind: ScopeKind | 'admin', name?: string): void {
  if (hasScope(principal, kind, name)) return;
  const needed = kind === 'admin' ? 'admin' : `${kind}:${name ?? '*'}`;
  throw new WorkqError(
    'FORBIDDEN',
    `This token lacks the scope "${needed}" (or "${kind === 'admin' ? 'admin' : `${kind}:*`}").`,
  );
}

/** Whether the principal holds any consume scope at all (lease operations are authorized by the lease token itself). */
export function requireSomeConsumeScope(principal: Principal): void {
  const scopes = principal.scopes;
  if (scopes === null || scopes.has('admin') || [...scopes].some((s) => s.startsWith('consume:'))) return;
  throw new WorkqError('FORBIDDEN', 'This token has no "consume:<job>" scope, so it cannot hold leases.');
}

export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1' || host === '[::1]';
}

/** Parses `token=scope,scope; token2=scope` (the `WORKQ_TOKENS` format). */
export function parseTokenList(text: string): TokenGrant[] {
  return text
    .split(/[;\n]/)
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const at = part.indexOf('=');
      if (at <= 0) {
        throw new WorkqError(
          'VALIDATION',
          'Each token entry must look like "<token>=<scope>,<scope>", e.g. "<16+ characters>=produce:*,consume:*".',
        );
      }
      const scopes = part
        .slice(at + 1)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      return { token: part.slice(0, at).trim(), scopes };
    });
}
