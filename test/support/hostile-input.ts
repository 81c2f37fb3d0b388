/**
 * Hostile requests for the bad-input property tests: odd text and values, edits that break a valid request
 * at any depth, bodies as clients (or attackers) write them, and the servers' answers held to one rule:
 * a client error with a workq code, or a success; never a server fault, never anything from inside.
 */
import { catalogJsonSchemas, WORKQ_ERROR_CODES } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import fc from 'fast-check';
import superjson from 'superjson';
import { expect } from 'vitest';
import { expectNoLeak } from './leaks.ts';
import { collectingLogger } from './quiet-logger.ts';
import { rawClient } from './raw-client.ts';

/**
 * Runs per property, per store: bounded, so the suite stays quick; a failure prints its seed and counterexample.
 * `WORKQ_HOSTILE_RUNS` asks for more (or fewer) in a run by hand, to search longer than the suite does.
 */
export const RUNS = Number(process.env.WORKQ_HOSTILE_RUNS) || 200;

export const TOKENS = [
  { token: 'root-token-0123456789', scopes: ['admin'] },
  { token: 'prod-token-0123456789', scopes: ['produce:*'] },
  { token: 'work-token-0123456789', scopes: ['consume:*'] },
  { token: 'register-token-0123456789', scopes: ['register:*'] },
];
export const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

/** Text that stores and drivers trip over, or that looks like something it is not. */
export const nasty = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'a\udc00b',
    '\udbff\udfff',
    '😀',
    '',
    '\\u0000',
    '\\ud800',
    'x'.repeat(300),
    '%E0%A4%A',
    "'; DROP TABLE jobs; --",
    '00000000-0000-0000-0000-000000000000',
    '__proto__',
    '__superjson',
    '$where',
    'a.b',
  ),
);

/** JSON values made of `nasty` text, as keys too. */
export const nastyJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    nasty,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(nasty, tie('value'), { maxKeys: 3 }),
  ),
})).value;

/** A placeholder that `bodyText` swaps for arrays nested `depth` deep, built as text (no recursion here). */
export const DEEP = '@@deep@@';

/** Any value one field of a request may be given: odd text, numbers at the edges, dates, bigints, deep nesting. */
export const anyValue = fc.oneof(
  { weight: 3, arbitrary: nasty },
  nastyJson,
  fc.date(),
  fc.bigInt(),
  fc.integer(),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, 2 ** 53, 2 ** 31, -(2 ** 31) - 1, 1e308, 9e15, -1, 0),
  fc.constant(DEEP),
);

export type Path = readonly (string | number)[];

/** Every path into `value`: each field, item and container, the root left out. */
export function pathsOf(value: unknown, prefix: Path = []): Path[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => {
    const path = [...prefix, Array.isArray(value) ? Number(key) : key];
    return [path, ...pathsOf(item, path)];
  });
}

/** Fields a valid request leaves out, which some procedures read. */
export const EXTRA_FIELDS: readonly Path[] = [
  ['payload', 'extra'],
  ['options', 'idempotencyKey'],
  ['options', 'runAt'],
  ['options', 'delayMs'],
  ['options', 'priority'],
  ['options', 'maxAttempts'],
  ['options', 'leaseMs'],
  ['options', 'backoff', 'delayMs'],
  ['options', 'order'],
  ['host'],
  ['leaseMs'],
  ['minVersion'],
  ['items', 0, 'leaseMs'],
  ['items', 0, 'result', 'extra'],
  ['next', 'options', 'runAt'],
  ['next', 'options', 'idempotencyKey'],
  ['cursor'],
];

/** Up to three changes to a valid request: one of its own fields, or one it leaves out, set to any value. */
export const editsOf = (valid: unknown) =>
  fc.array(fc.tuple(fc.constantFrom(...pathsOf(valid), ...EXTRA_FIELDS), anyValue), { minLength: 1, maxLength: 3 });
export const depth = fc.integer({ min: 60, max: 5_000 });

/** `value` with `path` set to `to`, objects made along the way where missing. */
export function withField(value: unknown, path: Path, to: unknown): unknown {
  const [step, ...rest] = path;
  if (step === undefined) return to;
  const base = (typeof value === 'object' && value !== null ? value : {}) as Record<string | number, unknown>;
  const copy = (Array.isArray(base) ? [...base] : { ...base }) as Record<string | number, unknown>;
  copy[step] = withField(base[step], rest, to);
  return copy;
}

export function applyEdits(value: unknown, changes: readonly (readonly [Path, unknown])[]): unknown {
  return changes.reduce((edited, [path, to]) => withField(edited, path, to), value);
}

/**
 * JSON text of `value` (a bigint as its digits, as a hand-written client might send it), the `DEEP`
 * placeholder, if any, swapped for arrays nested `levels` deep.
 */
export function bodyText(value: unknown, levels: number): string {
  const text = JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
  return (text ?? '').replace(`"${DEEP}"`, `${'['.repeat(levels)}1${']'.repeat(levels)}`);
}

/** A tRPC input as clients send it, through superjson; as plain JSON where superjson will not take it (`__proto__` keys). */
export function wire(value: unknown): unknown {
  try {
    return superjson.serialize(value);
  } catch {
    return { json: value };
  }
}

/** Every byte of `text` as UTF-8, percent-encoded (lone surrogates become U+FFFD, as any encoder makes them). */
export function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
}

export const contentType = fc.oneof(
  { weight: 4, arbitrary: fc.constant('application/json') },
  fc.constantFrom(
    'application/json; charset=utf-8',
    'Application/JSON',
    'text/plain',
    'text/plain;charset=UTF-8',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/octet-stream',
    'application/jsonx',
  ),
  fc.constant(undefined),
  fc.string({ unit: 'grapheme-ascii', maxLength: 30 }),
);

export const token = fc.constantFrom<string | undefined>(
  'root-token-0123456789',
  'root-token-0123456789',
  'root-token-0123456789',
  'root-token-0123456789',
  'prod-token-0123456789',
  'work-token-0123456789',
  'nope',
  undefined,
);

/** A path segment: a known name, percent-encoded odd text, or encodings that do not decode. */
export const segment = fc.oneof(
  fc.constantFrom('sendEmail', 'imageConvert', 'noSuchJob'),
  nasty.map(percentEncode),
  fc.constantFrom('%E0%A4%A', '%', '%zz', '%C0%AF', '%ED%A0%80', '%F0%9F', 'send%00Email', '..', 'a%2Fb'),
);

/**
 * A queue server on `storeUrl` for the property tests: `TOKENS`, long polls cut short, the catalog's schemas
 * registered and `schemas` (e.g. `{ type: 'object' }` types a test may pause or hold) beside them.
 */
export async function startHostileServer(
  storeUrl: string,
  schemas: { name: string; version: number; jsonSchema: Record<string, unknown> }[] = [],
): Promise<QueueServer> {
  const server = await startServer({
    store: storeUrl,
    port: 0,
    tokens: TOKENS,
    limits: { maxLongPollMs: 20 },
    logger: collectingLogger(),
    pollIntervalMs: 20,
  });
  await rawClient(server.url, 'root-token-0123456789').schemas.register.mutate({
    schemas: [...catalogJsonSchemas(jobs), ...schemas],
  });
  return server;
}

/** A held job's lease. */
export type Lease = { id: string; leaseToken: string };

/** The shape of a lease, for listing a request's fields before a job is held. */
const SOME_LEASE: Lease = { id: '00000000-0000-0000-0000-000000000000', leaseToken: 'token' };

/**
 * tRPC procedures to try, by label: each one's path, whether it is a query (else a mutation), whether it may act
 * on a held job, and a valid input on `lease`.
 */
export type TrpcCalls = Record<
  string,
  { path: string; query?: boolean; held: boolean; input: (lease: Lease) => unknown }
>;

/** One request as the property tests send it. */
export interface HostileRequest {
  method: string;
  path: string;
  contentType?: string | undefined;
  token?: string | undefined;
  body?: string | undefined;
}

/**
 * Whether fetch refused the request itself: `Headers` throws with no cause for a NUL, CR or LF, and the HTTP
 * client under fetch fails with an invalid-argument cause for the other control characters. Anything else (a
 * refused connection, a reset) reached or tried to reach the server and is a real failure.
 */
function refusedBeforeSending(error: TypeError): boolean {
  const cause = error.cause as { code?: unknown } | undefined;
  return cause === undefined || cause.code === 'UND_ERR_INVALID_ARG';
}

/** What the property tests do against one running server, at `url()` (asked per call: it starts later), with `TOKENS`. */
export function hostileTarget(url: () => string) {
  /** Sends one request; `undefined` when fetch itself will not send it (a header value it refuses). */
  const send = async (request: HostileRequest): Promise<{ status: number; text: string } | undefined> => {
    const headers: Record<string, string> = {};
    if (request.contentType !== undefined) headers['content-type'] = request.contentType;
    if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`;
    let response: Response;
    try {
      response = await fetch(`${url()}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body === undefined || request.method === 'GET' ? {} : { body: request.body }),
      });
    } catch (error) {
      if (error instanceof TypeError && refusedBeforeSending(error)) return undefined;
      throw error;
    }
    return { status: response.status, text: await response.text() };
  };

  /** A client's error (4xx with a workq code) or a success; never a server fault, never anything from inside. */
  const expectClientAnswer = (answer: { status: number; text: string } | undefined, what: string) => {
    if (answer === undefined) return;
    expect(answer.status, `${what.slice(0, 400)}\n${answer.text.slice(0, 400)}`).toBeLessThan(500);
    expectNoLeak(answer.text);
    if (answer.status >= 400) {
      const codes = [...answer.text.matchAll(/"(?:code|workqCode)":"([A-Z_]+)"/g)].map((match) => match[1] ?? '');
      expect(
        codes.some((code) => (WORKQ_ERROR_CODES as readonly string[]).includes(code)),
        what,
      ).toBe(true);
    }
  };

  /** The server still serves: ready, and a valid enqueue is stored. */
  const expectStillServing = async () => {
    expect((await fetch(`${url()}/readyz`)).status).toBe(200);
    const enqueued = await rawClient(url(), 'prod-token-0123456789').jobs.enqueue.mutate({
      name: 'sendEmail',
      version: 1,
      payload: email,
    });
    expect(enqueued.created).toBe(true);
  };

  /**
   * A job of `name` (a `sendEmail` unless told) held under a real lease, so that fenced writes (complete, fail,
   * progress, …) reach the store. A hold or pause an earlier request put on the type is lifted first.
   */
  const hold = async (name = 'sendEmail', version = 1, payload: unknown = email): Promise<Lease> => {
    const root = rawClient(url(), 'root-token-0123456789');
    if (name !== 'sendEmail') await root.admin.resume.mutate({ name });
    await root.jobs.enqueue.mutate({ name, version, payload });
    const claimed = await rawClient(url(), 'work-token-0123456789').consumer.claim.mutate({
      name,
      maxVersion: version,
      limit: 1,
      workerId: 'fuzz',
    });
    const job = claimed.jobs[0];
    if (!job) throw new Error('nothing to claim');
    return { id: job.id, leaseToken: job.leaseToken };
  };

  /**
   * Sends `input` to the tRPC procedure at `path` as clients send it, through superjson (dates, bigints and the
   * like travel as what they are), alone or twice in one batch, with any `DEEP` placeholder nested `levels`
   * deep: a mutation in its body, a query in its URL. The answer must be a client's error or a success.
   */
  const expectTrpcClientAnswer = async (
    path: string,
    type: 'query' | 'mutation',
    input: unknown,
    sent: { levels: number; batch: boolean; contentType: string | undefined; token: string | undefined },
  ) => {
    const { levels, batch, ...headers } = sent;
    const envelope = wire(input);
    // A URL past the server's header limit is refused by Node itself, before any workq code runs.
    const text = bodyText(batch ? { 0: envelope, 1: envelope } : envelope, type === 'query' ? levels % 1_000 : levels);
    const base = batch ? `/trpc/${path},${path}?batch=1` : `/trpc/${path}`;
    const request =
      type === 'query'
        ? { method: 'GET', path: `${base}${batch ? '&' : '?'}input=${encodeURIComponent(text)}` }
        : { method: 'POST', path: base, body: text };
    expectClientAnswer(await send({ ...request, ...headers }), `${base} ${text.slice(0, 300)}`);
  };

  /**
   * Any of `calls`, its valid input broken by up to three edits, on a job `leaseFor` holds (or on no job),
   * answers a client's error or a success, alone and in a batch; then the server still serves.
   */
  const expectEveryCallAnswered = async (calls: TrpcCalls, leaseFor: (held: boolean) => Promise<Lease>) => {
    const call = fc.constantFrom(...Object.keys(calls)).chain((label) =>
      fc.record({
        label: fc.constant(label),
        changes: editsOf(calls[label]?.input(SOME_LEASE) ?? {}),
        levels: depth,
        held: fc.boolean(),
        batch: fc.boolean(),
        contentType,
        token,
      }),
    );
    await fc.assert(
      fc.asyncProperty(call, async ({ label, changes, held, ...sent }) => {
        const { path, query, input, held: onHeldJob } = calls[label] as TrpcCalls[string];
        const lease = await leaseFor(onHeldJob && held);
        await expectTrpcClientAnswer(path, query ? 'query' : 'mutation', applyEdits(input(lease), changes), sent);
      }),
      { numRuns: RUNS },
    );
    await expectStillServing();
  };

  return { send, expectClientAnswer, expectEveryCallAnswered, expectStillServing, hold };
}
