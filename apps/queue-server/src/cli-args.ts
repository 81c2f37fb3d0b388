import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type CronEntry, parseCrontab } from '@workq/core/engine';
import { parseTokenList } from './auth.ts';
import { DEFAULT_LIMITS, type ServerOptions } from './options.ts';

export const HELP = `workq-server: the workq queue server

Usage: workq-server [options]

Every option can also be set as an environment variable (shown in brackets); flags win.
  --store <url>             postgres://…, mongodb://…, mysql://…, pglite://memory, pglite://<dir>
                            [WORKQ_STORE] (default: embedded, data under --data-dir)
  --host <address>          [WORKQ_HOST] (default 127.0.0.1)
  --port <n>                [WORKQ_PORT] (default 4000)
  --token <t=scope,…>       a bearer token (16+ characters) and its scopes; repeatable
                            [WORKQ_TOKENS, ";"-separated]
                            scopes: produce:<job|*>, consume:<job|*>, register:<job|*>, admin
  --token-secret <secret>   also accept signed tokens (JWT, HS256/384/512) made by mintToken() with this
                            secret, at least 32 bytes [WORKQ_TOKEN_SECRET] (prefer the variable: flags
                            show in process lists)
  --max-token-lifetime <d>  refuse signed tokens valid longer than this, from their iat (or now) to their
                            exp: 90s, 30m, 24h, 7d or milliseconds [WORKQ_MAX_TOKEN_LIFETIME] (default 24h)
  --token-audience <aud>    signed tokens must carry this "aud" claim [WORKQ_TOKEN_AUDIENCE]
  --token-issuer <iss>      signed tokens must carry this "iss" claim [WORKQ_TOKEN_ISSUER]
  --cors-origin <origin>    an origin whose browser pages may call the server, e.g. https://app.example.com;
                            repeatable [WORKQ_CORS_ORIGINS, ","-separated] ("*" is refused)
  --allowed-host <name>     without tokens, a host name (besides localhost, 127.x.x.x, [::1]) the
                            server answers requests for; repeatable [WORKQ_ALLOWED_HOSTS, ","-separated]
  --data-dir <dir>          where the embedded store keeps data [WORKQ_DATA_DIR] (default .workq)
  --crontab <file>          recurring jobs: a JSON array of { cron, name, payload?, version?, timezone?,
                            key?, options? } [WORKQ_CRONTAB]
  --max-payload-bytes <n>   [WORKQ_MAX_PAYLOAD_BYTES] (default ${DEFAULT_LIMITS.maxPayloadBytes})
  --max-result-bytes <n>    a larger job result ends its job dead [WORKQ_MAX_RESULT_BYTES]
                            (default: --max-payload-bytes)
  --max-batch-size <n>      [WORKQ_MAX_BATCH_SIZE] (default ${DEFAULT_LIMITS.maxBatchSize})
  --max-trpc-batch-size <n> [WORKQ_MAX_TRPC_BATCH_SIZE] (default ${DEFAULT_LIMITS.maxTrpcBatchSize})
  --max-body-bytes-in-flight <n>  request-body bytes held at once over all requests (one caller's:
                            half); a body past it is refused, retryably [WORKQ_MAX_BODY_BYTES_IN_FLIGHT]
                            (default ${DEFAULT_LIMITS.maxBodyBytesInFlight})
  --max-claim-bytes <n>     payload bytes one claim's answer may carry: its limit is cut to this over
                            --max-payload-bytes jobs [WORKQ_MAX_CLAIM_BYTES] (default ${DEFAULT_LIMITS.maxClaimBytes})
  --max-children-page-bytes <n>  bytes of results one page of a job's children may carry
                            [WORKQ_MAX_CHILDREN_PAGE_BYTES] (default ${DEFAULT_LIMITS.maxChildrenPageBytes})
  --max-answer-bytes-in-flight <n>  payload and result bytes the claims, pages of children and job
                            statuses answered at once may carry (one caller's: half); past it a claim is cut
                            or waits
                            [WORKQ_MAX_ANSWER_BYTES_IN_FLIGHT] (default ${DEFAULT_LIMITS.maxAnswerBytesInFlight})
  --max-store-calls-in-flight <n>  store calls made for requests at once; past it they take turns by
                            caller [WORKQ_MAX_STORE_CALLS_IN_FLIGHT] (default ${DEFAULT_LIMITS.maxStoreCallsInFlight})
  --max-long-poll-ms <n>    [WORKQ_MAX_LONG_POLL_MS] (default ${DEFAULT_LIMITS.maxLongPollMs})
  --max-buffered-events <n> job events kept per subscriber that is not reading [WORKQ_MAX_BUFFERED_EVENTS]
                            (default ${DEFAULT_LIMITS.maxBufferedEvents})
  --max-event-streams <n>   job-event streams open at once on this server [WORKQ_MAX_EVENT_STREAMS]
                            (default ${DEFAULT_LIMITS.maxEventStreams})
  --max-event-streams-per-token <n>  … held by one caller [WORKQ_MAX_EVENT_STREAMS_PER_TOKEN]
                            (default ${DEFAULT_LIMITS.maxEventStreamsPerToken})
  --headers-timeout-ms <n>  longest a client may take to send its headers [WORKQ_HEADERS_TIMEOUT_MS]
                            (default ${DEFAULT_LIMITS.headersTimeoutMs})
  --request-timeout-ms <n>  longest a client may take to send a whole request (not the answer: long
                            polls and event streams go on) [WORKQ_REQUEST_TIMEOUT_MS]
                            (default ${DEFAULT_LIMITS.requestTimeoutMs})
  --keep-alive-timeout-ms <n> how long an idle connection stays open [WORKQ_KEEP_ALIVE_TIMEOUT_MS]
                            (default ${DEFAULT_LIMITS.keepAliveTimeoutMs})
  --max-connections <n>     connections open at once; more are closed as they arrive
                            [WORKQ_MAX_CONNECTIONS] (default ${DEFAULT_LIMITS.maxConnections})
  --help
`;

const intOption = (value: string | undefined, name: string): number | undefined => {
  if (value === undefined || value === '') return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0)
    throw new Error(`${name} must be a non-negative integer; got "${value}".`);
  return parsed;
};

const DURATION_UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A span written `90s`, `30m`, `24h`, `7d`, `500ms`, or as plain milliseconds; positive. */
const durationOption = (value: string | undefined, name: string): number | undefined => {
  if (value === undefined || value === '') return undefined;
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(value.trim());
  const ms = match
    ? Number(match[1]) * DURATION_UNIT_MS[(match[2] ?? 'ms') as keyof typeof DURATION_UNIT_MS]
    : Number.NaN;
  if (!(Number.isSafeInteger(ms) && ms > 0)) {
    throw new Error(`${name} must be a positive span such as 90s, 30m, 24h or 7d (or milliseconds); got "${value}".`);
  }
  return ms;
};

/** Reads flags, then `WORKQ_*` environment variables, into server options. */
export function parseServerArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ServerOptions | 'help' {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      store: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      token: { type: 'string', multiple: true },
      'token-secret': { type: 'string' },
      'max-token-lifetime': { type: 'string' },
      'token-audience': { type: 'string' },
      'token-issuer': { type: 'string' },
      'cors-origin': { type: 'string', multiple: true },
      'data-dir': { type: 'string' },
      crontab: { type: 'string' },
      'max-payload-bytes': { type: 'string' },
      'max-result-bytes': { type: 'string' },
      'max-batch-size': { type: 'string' },
      'max-trpc-batch-size': { type: 'string' },
      'max-body-bytes-in-flight': { type: 'string' },
      'max-claim-bytes': { type: 'string' },
      'max-children-page-bytes': { type: 'string' },
      'max-answer-bytes-in-flight': { type: 'string' },
      'max-store-calls-in-flight': { type: 'string' },
      'max-long-poll-ms': { type: 'string' },
      'max-buffered-events': { type: 'string' },
      'max-event-streams': { type: 'string' },
      'max-event-streams-per-token': { type: 'string' },
      'allowed-host': { type: 'string', multiple: true },
      'headers-timeout-ms': { type: 'string' },
      'request-timeout-ms': { type: 'string' },
      'keep-alive-timeout-ms': { type: 'string' },
      'max-connections': { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const tokens = values.token ? parseTokenList(values.token.join(';')) : parseTokenList(env.WORKQ_TOKENS ?? '');
  const limits = {
    maxPayloadBytes: intOption(values['max-payload-bytes'] ?? env.WORKQ_MAX_PAYLOAD_BYTES, 'max-payload-bytes'),
    maxResultBytes: intOption(values['max-result-bytes'] ?? env.WORKQ_MAX_RESULT_BYTES, 'max-result-bytes'),
    maxBatchSize: intOption(values['max-batch-size'] ?? env.WORKQ_MAX_BATCH_SIZE, 'max-batch-size'),
    maxTrpcBatchSize: intOption(values['max-trpc-batch-size'] ?? env.WORKQ_MAX_TRPC_BATCH_SIZE, 'max-trpc-batch-size'),
    maxBodyBytesInFlight: intOption(
      values['max-body-bytes-in-flight'] ?? env.WORKQ_MAX_BODY_BYTES_IN_FLIGHT,
      'max-body-bytes-in-flight',
    ),
    maxClaimBytes: intOption(values['max-claim-bytes'] ?? env.WORKQ_MAX_CLAIM_BYTES, 'max-claim-bytes'),
    maxChildrenPageBytes: intOption(
      values['max-children-page-bytes'] ?? env.WORKQ_MAX_CHILDREN_PAGE_BYTES,
      'max-children-page-bytes',
    ),
    maxAnswerBytesInFlight: intOption(
      values['max-answer-bytes-in-flight'] ?? env.WORKQ_MAX_ANSWER_BYTES_IN_FLIGHT,
      'max-answer-bytes-in-flight',
    ),
    maxStoreCallsInFlight: intOption(
      values['max-store-calls-in-flight'] ?? env.WORKQ_MAX_STORE_CALLS_IN_FLIGHT,
      'max-store-calls-in-flight',
    ),
    maxLongPollMs: intOption(values['max-long-poll-ms'] ?? env.WORKQ_MAX_LONG_POLL_MS, 'max-long-poll-ms'),
    maxBufferedEvents: intOption(values['max-buffered-events'] ?? env.WORKQ_MAX_BUFFERED_EVENTS, 'max-buffered-events'),
    headersTimeoutMs: intOption(values['headers-timeout-ms'] ?? env.WORKQ_HEADERS_TIMEOUT_MS, 'headers-timeout-ms'),
    requestTimeoutMs: intOption(values['request-timeout-ms'] ?? env.WORKQ_REQUEST_TIMEOUT_MS, 'request-timeout-ms'),
    keepAliveTimeoutMs: intOption(
      values['keep-alive-timeout-ms'] ?? env.WORKQ_KEEP_ALIVE_TIMEOUT_MS,
      'keep-alive-timeout-ms',
    ),
    maxConnections: intOption(values['max-connections'] ?? env.WORKQ_MAX_CONNECTIONS, 'max-connections'),
    maxEventStreams: intOption(values['max-event-streams'] ?? env.WORKQ_MAX_EVENT_STREAMS, 'max-event-streams'),
    maxEventStreamsPerToken: intOption(
      values['max-event-streams-per-token'] ?? env.WORKQ_MAX_EVENT_STREAMS_PER_TOKEN,
      'max-event-streams-per-token',
    ),
  };
  const crontabFile = values.crontab ?? env.WORKQ_CRONTAB;
  const tokenSecret = values['token-secret'] || env.WORKQ_TOKEN_SECRET || undefined;
  const maxTokenLifetimeMs = durationOption(
    values['max-token-lifetime'] ?? env.WORKQ_MAX_TOKEN_LIFETIME,
    'max-token-lifetime',
  );
  const tokenAudience = values['token-audience'] || env.WORKQ_TOKEN_AUDIENCE || undefined;
  const tokenIssuer = values['token-issuer'] || env.WORKQ_TOKEN_ISSUER || undefined;
  const corsOrigins = (values['cors-origin'] ?? [env.WORKQ_CORS_ORIGINS ?? ''])
    .flatMap((list) => list.split(','))
    .map((origin) => origin.trim())
    .filter(Boolean);
  const allowedHosts = (values['allowed-host'] ?? [env.WORKQ_ALLOWED_HOSTS ?? ''])
    .flatMap((list) => list.split(','))
    .map((name) => name.trim())
    .filter(Boolean);
  return {
    store: values.store ?? env.WORKQ_STORE,
    host: values.host ?? env.WORKQ_HOST,
    port: intOption(values.port ?? env.WORKQ_PORT, 'port'),
    tokens,
    dataDir: values['data-dir'] ?? env.WORKQ_DATA_DIR,
    limits: Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)),
    ...(crontabFile ? { crontab: readCrontab(crontabFile) } : {}),
    ...(tokenSecret ? { tokenSecret } : {}),
    ...(maxTokenLifetimeMs !== undefined ? { maxTokenLifetimeMs } : {}),
    ...(tokenAudience ? { tokenAudience } : {}),
    ...(tokenIssuer ? { tokenIssuer } : {}),
    ...(corsOrigins.length > 0 ? { cors: { origins: corsOrigins } } : {}),
    ...(allowedHosts.length > 0 ? { allowedHosts } : {}),
  };
}

/** The entries of a crontab file, checked. */
function readCrontab(file: string): CronEntry[] {
  let entries: unknown;
  try {
    entries = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`crontab ${file} could not be read as JSON: ${error instanceof Error ? error.message : error}`);
  }
  if (!Array.isArray(entries)) throw new Error(`crontab ${file} must hold a JSON array of entries.`);
  return parseCrontab(entries).map((scheduled) => scheduled.entry);
}
