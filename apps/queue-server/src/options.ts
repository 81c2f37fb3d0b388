import { type Catalog, MAX_BATCH_SIZE } from '@workq/core';
import {
  type CronEntry,
  DEFAULT_HISTORY_RETENTION_MS,
  DEFAULT_SCHEMA_LIMITS,
  type SchemaLimits,
  type Store,
} from '@workq/core/engine';
import { DEFAULT_MAX_TOKEN_LIFETIME_MS } from './signed-tokens.ts';

/** A bearer token and what it may do. */
export interface TokenGrant {
  token: string;
  /** `produce:<job|*>`, `consume:<job|*>`, `register:<job|*>`, `admin` (admin implies every other scope); see `scopes.ts`. */
  scopes: readonly string[];
}

/** Which browser pages, served from other origins, may call the server. */
export interface CorsOptions {
  /**
   * Origins (`scheme://host[:port]`, e.g. `https://app.example.com`) whose
   * pages may call the server: their preflights are answered and responses
   * carry `access-control-allow-origin`. `*` is refused at start
   * (`VALIDATION`): list each origin. Checked at start.
   * @defaultValue [] (no page on another origin can read a response)
   */
  origins?: readonly string[] | undefined;
}

/** Request limits; each has a default. */
export interface ServerLimits {
  /** Largest JSON payload of one job, in bytes. @defaultValue 262_144 (256 KiB) */
  maxPayloadBytes?: number | undefined;
  /**
   * Largest JSON result of one job, in bytes as stored. A larger result is
   * refused with `PAYLOAD_TOO_LARGE` and stored nowhere, and its job ends
   * dead with an error naming the limit (it would make the same result on
   * every retry). Results are kept in the store and sent in every
   * `completed` event, so they are bounded like payloads.
   * @defaultValue `maxPayloadBytes` (256 KiB unless set)
   */
  maxResultBytes?: number | undefined;
  /** Most jobs in one enqueueMany, claim or ack batch. @defaultValue 1000 */
  maxBatchSize?: number | undefined;
  /** Most calls in one tRPC HTTP batch. @defaultValue 50 */
  maxTrpcBatchSize?: number | undefined;
  /** Largest request body, in bytes. @defaultValue 16_777_216 (16 MiB) */
  maxRequestBytes?: number | undefined;
  /**
   * Request-body bytes held at once over all requests, each counted from its
   * first byte until its answer is sent (what is decoded from it lives as
   * long). A body that would pass it is refused with a retryable
   * `UNAVAILABLE`, which the SDK tries again, so many large bodies at once
   * cannot exhaust the server's memory. One caller's requests (a static
   * token's, or a signed token's subject's) hold at most half of it (never
   * less than `maxRequestBytes`), so no caller can take all of it from the
   * others. At least `maxRequestBytes` (`VALIDATION` at start
   * otherwise).
   * @defaultValue 67_108_864 (64 MiB), or `maxRequestBytes` when that is larger
   */
  maxBodyBytesInFlight?: number | undefined;
  /**
   * The payload bytes one claim's answer may carry. A claim's answer holds
   * every payload it leased, and the server holds several times that while it
   * reads and writes it, so a claim's `limit` is cut to
   * `floor(maxClaimBytes / maxPayloadBytes)` jobs (256 with the defaults): its
   * answer stays within this bound whatever its jobs carry. The worker claims
   * again for the slots it has left. At least `maxPayloadBytes` (`VALIDATION`
   * at start otherwise).
   * @defaultValue 67_108_864 (64 MiB), or `maxPayloadBytes` when that is larger
   */
  maxClaimBytes?: number | undefined;
  /**
   * The stored bytes the server's answers may carry at once, over all
   * requests: the payloads of the claims being answered and the results of
   * the pages of children. Each claim or page takes room for the most it may
   * bring before it reads (its `limit` cut to what is free, or it waits for
   * room while not one job fits), keeps what it brought, and gives that back
   * once its answer is sent; so many claims at once on a queue of large jobs
   * cannot exhaust the server's memory. One caller's requests hold at most
   * half of it (never less than one claim or page), so no caller that leaves
   * its answers unread can stop the others. Job statuses (`jobs.get`,
   * `jobs.wait`, `GET /v1/job/:id`) and pages of `admin.list` count what
   * their results, errors and children bring, once read. At least `maxClaimBytes` and
   * `maxChildrenPageBytes` (`VALIDATION` at start otherwise).
   * @defaultValue 268_435_456 (256 MiB), or the larger of those two when larger
   */
  maxAnswerBytesInFlight?: number | undefined;
  /**
   * The bytes one page of a job's children may carry: `consumer.children`,
   * the first page a claim carries for each parent it resumes (this shared
   * among them), and `jobs.children`. Each child brings its stored result and
   * error (and in `jobs.children` its payload and error history), up to
   * `maxResultBytes` each, and a thousand of them fit a page's count, so a
   * page ends at the child that brings it to this many bytes and says more
   * follow (`jobs.children`: read on after its last child until a page comes
   * back empty). A page holds at least one child. Cut by what the children
   * carry, not by the largest they may carry: children with small results
   * come a thousand to a page whatever this is.
   * @defaultValue 16_777_216 (16 MiB)
   */
  maxChildrenPageBytes?: number | undefined;
  /**
   * Store calls made for requests that run at once, about the store's
   * connections (PostgreSQL and MySQL pools hold 10). Past it each call waits
   * for its turn, and turns go round the callers waiting (a static token, a
   * signed token's subject), one call each: a caller that sends more calls
   * than the store can serve waits behind its own, and every other caller's
   * call runs after at most one of each caller waiting. The maintenance roles'
   * calls do not count. @defaultValue 16
   */
  maxStoreCallsInFlight?: number | undefined;
  /** Longest a claim or result request may wait for work, in milliseconds. @defaultValue 30_000 */
  maxLongPollMs?: number | undefined;
  /**
   * Job events kept for one event subscriber that is not reading; past it they are dropped and the
   * subscriber gets `resync` (docs/events.md). @defaultValue 10_000
   */
  maxBufferedEvents?: number | undefined;
  /**
   * Job-event streams (`events.watch`) open at once on this server; one past
   * it is refused with a retryable `UNAVAILABLE` (the SDK tries again, backing
   * off to 4 s, or a load balancer's other server takes it). @defaultValue 1_000
   */
  maxEventStreams?: number | undefined;
  /**
   * Job-event streams one caller (a static token, or a signed token's
   * subject) may hold open at once; one past it is refused with `FORBIDDEN`, which ends `sdk.events` (a client
   * that opens this many is leaking them). Not counted in open mode.
   * @defaultValue 64
   */
  maxEventStreamsPerToken?: number | undefined;
  /**
   * Longest a client may take to send a request's headers, in milliseconds;
   * past it the connection is closed (a slow-headers attack holds no socket
   * longer). At most `requestTimeoutMs`. @defaultValue 10_000
   */
  headersTimeoutMs?: number | undefined;
  /**
   * Longest a client may take to send a whole request, headers and body, in
   * milliseconds; past it the server answers 408 and closes the connection,
   * so a body trickled a byte at a time holds nothing for long. It bounds
   * receiving the request only: a long poll (`maxLongPollMs`) or an event
   * stream answers for as long as it needs. @defaultValue 30_000
   */
  requestTimeoutMs?: number | undefined;
  /**
   * How long an idle keep-alive connection stays open between requests, in
   * milliseconds: longer than the 60 s idle timeout of common load
   * balancers, so they close first and never send on a socket the server is
   * closing. @defaultValue 65_000
   */
  keepAliveTimeoutMs?: number | undefined;
  /**
   * Most connections open at once (each waiting worker and event stream
   * holds one); a connection past it is closed as it arrives, and those open
   * are served as before. Keep the process's file-descriptor limit above it.
   * @defaultValue 10_000
   */
  maxConnections?: number | undefined;
  /**
   * Bounds on registered payload schemas: size, nesting, versions per job
   * type and job types in the store (see `SchemaLimits`).
   * @defaultValue `DEFAULT_SCHEMA_LIMITS` (64 KiB, 64 levels, 100 versions, 1000 job types)
   */
  schemas?: SchemaLimits | undefined;
}

export interface ServerOptions {
  /**
   * Store URL: `postgres://`, `mongodb://`, `mysql://`, `pglite://memory`, `pglite://<dir>`; or a
   * store already opened (e.g. by `createMongoStore` over a client of your own), which the server
   * then uses and closes when it closes.
   * @defaultValue the embedded default: MongoDB via mongodb-memory-server under `.workq/`,
   * else PGlite under `.workq/` where no MongoDB binary can be had
   */
  store?: string | Store | undefined;
  /** @defaultValue 4000 (0 picks a free port) */
  port?: number | undefined;
  /** @defaultValue '127.0.0.1' */
  host?: string | undefined;
  /** Accepted bearer tokens. With none (and no `tokenSecret`), the server serves only on a loopback address. @defaultValue [] */
  tokens?: readonly TokenGrant[] | undefined;
  /**
   * Accept signed tokens (JWTs made by `mintToken` with this secret, HS256,
   * HS384 or HS512) beside `tokens`: their `scope` claim holds the scopes
   * (space-separated), `exp` is required, `nbf` is checked when present, and
   * `sub` is kept as the caller's subject. At least 32 bytes (`VALIDATION` at
   * start otherwise). A server with a token secret requires tokens, so it may
   * bind a non-loopback address.
   * @defaultValue none (only `tokens` are accepted)
   */
  tokenSecret?: string | undefined;
  /**
   * The longest a signed token may be valid, in milliseconds: one whose
   * `exp` lies further than this past its `iat` (or past now, without one)
   * is refused with `UNAUTHORIZED`, so a leaked token never outlives it.
   * Positive (`VALIDATION` at start otherwise).
   * @defaultValue 86_400_000 (24 h)
   */
  maxTokenLifetimeMs?: number | undefined;
  /**
   * The `aud` claim every signed token must carry (`mintToken({ audience })`),
   * so tokens minted for another service with the same secret are refused.
   * @defaultValue none (`aud` is not checked)
   */
  tokenAudience?: string | undefined;
  /**
   * The `iss` claim every signed token must carry (`mintToken({ issuer })`).
   * @defaultValue none (`iss` is not checked)
   */
  tokenIssuer?: string | undefined;
  /** Cross-origin browser access. @defaultValue { origins: [] } */
  cors?: CorsOptions | undefined;
  /**
   * Without tokens (open mode, loopback only) the server answers only
   * requests whose `Host` names a loopback address (`localhost`,
   * `127.x.x.x`, `[::1]`, any port) or one of these host names (any port),
   * and no cross-origin browser request but from `cors.origins`: a web page
   * that rebinds its own name to 127.0.0.1 reaches nothing (docs/security.md).
   * Host names only (`workq.test`), no scheme, port or path; checked at start.
   * With tokens, `Host` is not checked: a page cannot send a token it does
   * not hold. @defaultValue []
   */
  allowedHosts?: readonly string[] | undefined;
  limits?: ServerLimits | undefined;
  /** Where the embedded default keeps its data. @defaultValue '.workq' */
  dataDir?: string | undefined;
  /** How often waiting claims re-check the store when no wake-up arrives (delayed jobs, other instances without notify). @defaultValue 1000 */
  pollIntervalMs?: number | undefined;
  /** How long finished jobs are kept as history. @defaultValue 7 days */
  historyRetentionMs?: number | undefined;
  /**
   * Recurring jobs: each entry enqueues one job at every time its cron
   * expression names. Checked at start (`VALIDATION` naming the entry).
   * @defaultValue []
   */
  crontab?: readonly CronEntry[] | undefined;
  /**
   * The worker registry (`admin.workers`) lists the consumers seen within
   * this window: claiming, or extending the leases of the jobs they run.
   * @defaultValue 60_000
   */
  presenceWindowMs?: number | undefined;
  /**
   * How often the leader reads the schedules kept in the store
   * (`admin.upsertSchedule`) again; a schedule written on the leader itself,
   * or announced by another server over the wake-up bus, is read at once.
   * @defaultValue 5_000
   */
  scheduleReloadMs?: number | undefined;
  /**
   * The job catalog (`defineCatalog`), when the server is built with it.
   * Payloads of the job versions it declares are then parsed with its Zod
   * schemas — refinements, pipes, coercion and all, exactly as the SDK parses
   * them — over tRPC and plain HTTP alike; other jobs and versions are checked
   * against the JSON Schema clients registered, and a plain HTTP enqueue's
   * answer lists, under `warnings`, the constraints that schema cannot
   * express. Its schemas are registered at start (`CONFLICT` when a version
   * is registered with a different schema).
   * @defaultValue none (registered JSON Schemas only)
   */
  jobs?: Catalog | undefined;
  /** Where log lines go. @defaultValue JSON lines on stderr */
  logger?: Logger | undefined;
}

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface ResolvedServerOptions {
  store: string | Store | undefined;
  port: number;
  host: string;
  tokens: readonly TokenGrant[];
  tokenSecret: string | undefined;
  maxTokenLifetimeMs: number;
  tokenAudience: string | undefined;
  tokenIssuer: string | undefined;
  cors: Required<CorsOptions>;
  allowedHosts: readonly string[];
  limits: Required<ServerLimits>;
  dataDir: string;
  pollIntervalMs: number;
  historyRetentionMs: number;
  crontab: readonly CronEntry[];
  presenceWindowMs: number;
  scheduleReloadMs: number;
  jobs: Catalog | undefined;
  logger: Logger;
}

export const DEFAULT_LIMITS: Required<ServerLimits> = Object.freeze({
  maxPayloadBytes: 256 * 1024,
  maxResultBytes: 256 * 1024,
  maxBatchSize: MAX_BATCH_SIZE,
  maxTrpcBatchSize: 50,
  maxRequestBytes: 16 * 1024 * 1024,
  maxBodyBytesInFlight: 64 * 1024 * 1024,
  maxClaimBytes: 64 * 1024 * 1024,
  maxChildrenPageBytes: 16 * 1024 * 1024,
  maxAnswerBytesInFlight: 256 * 1024 * 1024,
  maxStoreCallsInFlight: 16,
  maxLongPollMs: 30_000,
  maxBufferedEvents: 10_000,
  maxEventStreams: 1_000,
  maxEventStreamsPerToken: 64,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 65_000,
  maxConnections: 10_000,
  schemas: DEFAULT_SCHEMA_LIMITS,
});

function jsonLineLogger(): Logger {
  const write = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields })}\n`);
  };
  return { info: write('info'), warn: write('warn'), error: write('error') };
}

/** Resolves options once, from one set of defaults; never mutates the caller's object. */
export function resolveServerOptions(options: ServerOptions = {}): ResolvedServerOptions {
  const maxClaimBytes =
    options.limits?.maxClaimBytes ?? Math.max(DEFAULT_LIMITS.maxClaimBytes, options.limits?.maxPayloadBytes ?? 0);
  return {
    store: options.store,
    port: options.port ?? 4000,
    host: options.host ?? '127.0.0.1',
    tokens: [...(options.tokens ?? [])],
    tokenSecret: options.tokenSecret,
    maxTokenLifetimeMs: options.maxTokenLifetimeMs ?? DEFAULT_MAX_TOKEN_LIFETIME_MS,
    tokenAudience: options.tokenAudience,
    tokenIssuer: options.tokenIssuer,
    cors: { origins: [...(options.cors?.origins ?? [])] },
    allowedHosts: [...(options.allowedHosts ?? [])],
    limits: {
      ...DEFAULT_LIMITS,
      ...options.limits,
      maxResultBytes:
        options.limits?.maxResultBytes ?? options.limits?.maxPayloadBytes ?? DEFAULT_LIMITS.maxResultBytes,
      maxBodyBytesInFlight:
        options.limits?.maxBodyBytesInFlight ??
        Math.max(DEFAULT_LIMITS.maxBodyBytesInFlight, options.limits?.maxRequestBytes ?? 0),
      maxClaimBytes,
      maxAnswerBytesInFlight:
        options.limits?.maxAnswerBytesInFlight ??
        Math.max(
          DEFAULT_LIMITS.maxAnswerBytesInFlight,
          maxClaimBytes,
          options.limits?.maxChildrenPageBytes ?? DEFAULT_LIMITS.maxChildrenPageBytes,
        ),
    },
    dataDir: options.dataDir ?? '.workq',
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    historyRetentionMs: options.historyRetentionMs ?? DEFAULT_HISTORY_RETENTION_MS,
    crontab: [...(options.crontab ?? [])],
    presenceWindowMs: options.presenceWindowMs ?? 60_000,
    scheduleReloadMs: options.scheduleReloadMs ?? 5_000,
    jobs: options.jobs,
    logger: options.logger ?? jsonLineLogger(),
  };
}
