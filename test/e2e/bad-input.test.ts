import { catalogJsonSchemas, WORKQ_ERROR_CODES } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import fc from 'fast-check';
import superjson from 'superjson';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { blockedDuring } from '../support/event-loop.ts';
import { expectNoLeak } from '../support/leaks.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { describeEachStore, E2E_STORES, type FreshStore } from '../support/stores.ts';

/** Runs per property, per store: bounded, so the suite stays quick; a failure prints its seed and counterexample. */
const RUNS = 200;

const TOKENS = [
  { token: 'root-token-0123456789', scopes: ['admin'] },
  { token: 'prod-token-0123456789', scopes: ['produce:*'] },
  { token: 'work-token-0123456789', scopes: ['consume:*'] },
  { token: 'register-token-0123456789', scopes: ['register:*'] },
];
const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

/** Text that stores and drivers trip over, or that looks like something it is not. */
const nasty = fc.oneof(
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
const nastyJson = fc.letrec((tie) => ({
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
const DEEP = '@@deep@@';

/** Any value one field of a request may be given: odd text, numbers at the edges, dates, bigints, deep nesting. */
const anyValue = fc.oneof(
  { weight: 3, arbitrary: nasty },
  nastyJson,
  fc.date(),
  fc.bigInt(),
  fc.integer(),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, 2 ** 53, 2 ** 31, -(2 ** 31) - 1, 1e308, 9e15, -1, 0),
  fc.constant(DEEP),
);

type Path = readonly (string | number)[];

/** Every path into `value`: each field, item and container, the root left out. */
function pathsOf(value: unknown, prefix: Path = []): Path[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => {
    const path = [...prefix, Array.isArray(value) ? Number(key) : key];
    return [path, ...pathsOf(item, path)];
  });
}

/** Fields a valid request leaves out, which some procedures read. */
const EXTRA_FIELDS: readonly Path[] = [
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
const editsOf = (valid: unknown) =>
  fc.array(fc.tuple(fc.constantFrom(...pathsOf(valid), ...EXTRA_FIELDS), anyValue), { minLength: 1, maxLength: 3 });
const depth = fc.integer({ min: 60, max: 5_000 });

/** `value` with `path` set to `to`, objects made along the way where missing. */
function withField(value: unknown, path: Path, to: unknown): unknown {
  const [step, ...rest] = path;
  if (step === undefined) return to;
  const base = (typeof value === 'object' && value !== null ? value : {}) as Record<string | number, unknown>;
  const copy = (Array.isArray(base) ? [...base] : { ...base }) as Record<string | number, unknown>;
  copy[step] = withField(base[step], rest, to);
  return copy;
}

function applyEdits(value: unknown, changes: readonly (readonly [Path, unknown])[]): unknown {
  return changes.reduce((edited, [path, to]) => withField(edited, path, to), value);
}

/**
 * JSON text of `value` (a bigint as its digits, as a hand-written client might send it), the `DEEP`
 * placeholder, if any, swapped for arrays nested `levels` deep.
 */
function bodyText(value: unknown, levels: number): string {
  const text = JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
  return (text ?? '').replace(`"${DEEP}"`, `${'['.repeat(levels)}1${']'.repeat(levels)}`);
}

/** A tRPC input as clients send it, through superjson; as plain JSON where superjson will not take it (`__proto__` keys). */
function wire(value: unknown): unknown {
  try {
    return superjson.serialize(value);
  } catch {
    return { json: value };
  }
}

/** Every byte of `text` as UTF-8, percent-encoded (lone surrogates become U+FFFD, as any encoder makes them). */
function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
}

const contentType = fc.oneof(
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

const token = fc.constantFrom<string | undefined>(
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
const segment = fc.oneof(
  fc.constantFrom('sendEmail', 'imageConvert', 'noSuchJob'),
  nasty.map(percentEncode),
  fc.constantFrom('%E0%A4%A', '%', '%zz', '%C0%AF', '%ED%A0%80', '%F0%9F', 'send%00Email', '..', 'a%2Fb'),
);

const PROCEDURES = [
  'jobs.enqueue',
  'jobs.enqueueMany',
  'jobs.cancel',
  'consumer.claim',
  'consumer.complete',
  'consumer.fail',
  'consumer.extend',
  'consumer.progress',
  'consumer.updatePayload',
  'consumer.moveTo',
  'consumer.stopWaiting',
  'admin.retryDead',
  'admin.replay',
  'schemas.register',
] as const;

type Lease = { id: string; leaseToken: string };

/** The shape of a lease, for listing a request's fields before a job is held. */
const SOME_LEASE: Lease = { id: '00000000-0000-0000-0000-000000000000', leaseToken: 'token' };

const validEnvelope = { version: 1, payload: email, options: {} };

/** A valid input of each mutation, on a job held under `lease`. */
function validInput(procedure: (typeof PROCEDURES)[number], lease: Lease): unknown {
  const job = { name: 'sendEmail', version: 1 };
  switch (procedure) {
    case 'jobs.enqueue':
      return { ...job, payload: email, options: {} };
    case 'jobs.enqueueMany':
      return { ...job, payloads: [email, email], options: {} };
    case 'jobs.cancel':
    case 'admin.replay':
      return { id: lease.id };
    case 'consumer.claim':
      return { name: 'sendEmail', maxVersion: 1, limit: 1, workerId: 'fuzz', complete: [] };
    case 'consumer.complete':
      return { items: [{ ...lease, result: { messageId: 'm' } }] };
    case 'consumer.fail':
      return { ...lease, message: 'boom' };
    case 'consumer.extend':
      return { items: [lease] };
    case 'consumer.progress':
      return { ...lease, progress: 50 };
    case 'consumer.updatePayload':
      return { ...lease, ...job, payload: email };
    case 'consumer.moveTo':
      return { ...lease, next: { ...job, payload: email } };
    case 'consumer.stopWaiting':
      return { workerId: 'fuzz' };
    case 'admin.retryDead':
      return { name: 'sendEmail' };
    case 'schemas.register':
      return { schemas: [{ name: 'fuzzJob', version: 1, jsonSchema: { type: 'object' } }] };
  }
}

/** Keywords, meant and not, that a generated schema's objects are made of. */
const schemaKeyword = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom('type', 'properties', 'items', 'anyOf', 'pattern', '$ref', '$defs', 'required'),
  },
  fc.constantFrom('$async', '$id', '$anchor', '$dynamicRef', '$dynamicAnchor', '$recursiveRef', '$schema', '$data'),
  fc.constantFrom('patternProperties', 'propertyNames', 'additionalProperties', 'uniqueItems', 'format', 'enum'),
  fc.constantFrom('allOf', 'oneOf', 'not', 'if', 'then', 'else', 'prefixItems', 'contains', 'minLength', 'maximum'),
  fc.constantFrom('discriminator', 'x-workq-unchecked', 'unevaluatedProperties', 'dependentSchemas', 'default'),
  nasty,
);

/** Values a hostile registration puts in a schema: what loads, evaluates, recurses, backtracks, or is merely odd. */
const hostileSchemaPart = fc.oneof(
  fc.constantFrom<unknown>(
    { $async: true, type: 'object', required: ['x'] },
    { $ref: 'https://example.com/schema.json' },
    { $ref: '#' },
    { $ref: '#/$defs/missing' },
    { $defs: { a: { default: { $async: true } } }, $ref: '#/$defs/a/default' },
    { $id: 'https://json-schema.org/draft/2020-12/schema' },
    { $dynamicRef: '#meta' },
    { pattern: '^(a+)+$' },
    { pattern: '(a)\\1' },
    { pattern: 'a(?=b)' },
    { pattern: '[' },
    { pattern: '\\p{L}{1000}' },
    { patternProperties: { '^(a+)+$': {} } },
    { format: 'url' },
    { format: 'regex' },
    { type: 'array', uniqueItems: true },
    { type: 'array', items: { anyOf: [{ $ref: '#' }, { $ref: '#' }] } },
    { type: 'bogus' },
    { required: 'x' },
    { properties: [] },
    { $schema: 'https://example.com/meta' },
    { const: { $data: '/x' } },
    { multipleOf: 1e-300 },
    true,
    false,
    null,
    [],
  ),
  fc.integer({ min: 100, max: 3_000 }).map((fields) => ({
    properties: Object.fromEntries(
      Array.from({ length: fields }, (_, i) => [`f${i}`, { type: 'string', pattern: `^a${i}$` }]),
    ),
  })),
  fc.constant(DEEP),
  nastyJson,
);

/** Arbitrary JSON objects made of schema keywords, and real catalog schemas with hostile parts put in. */
const generatedSchema = fc.oneof(
  fc.dictionary(schemaKeyword, fc.oneof(hostileSchemaPart, nastyJson), { maxKeys: 6 }),
  fc.constantFrom(...catalogJsonSchemas(jobs).map(({ jsonSchema }) => jsonSchema)).chain((schema) =>
    fc
      .array(fc.tuple(fc.constantFrom(...pathsOf(schema), ['$defs', 'x'], ['properties', 'x']), hostileSchemaPart), {
        minLength: 1,
        maxLength: 3,
      })
      .map((changes) => applyEdits(schema, changes)),
  ),
);

await describeEachStore(E2E_STORES, 'bad input over $label', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;

  beforeAll(async () => {
    target = await open();
    server = await startServer({
      store: target.url,
      port: 0,
      tokens: TOKENS,
      limits: { maxLongPollMs: 20 },
      logger: collectingLogger(),
      pollIntervalMs: 20,
    });
    await rawClient(server.url, 'root-token-0123456789').schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  /** Sends one request; `undefined` when fetch itself will not send it (a header value it refuses). */
  const send = async (request: {
    method: string;
    path: string;
    contentType?: string | undefined;
    token?: string | undefined;
    body?: string | undefined;
  }): Promise<{ status: number; text: string } | undefined> => {
    const headers: Record<string, string> = {};
    if (request.contentType !== undefined) headers['content-type'] = request.contentType;
    if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`;
    let response: Response;
    try {
      response = await fetch(`${server.url}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body === undefined || request.method === 'GET' ? {} : { body: request.body }),
      });
    } catch (error) {
      if (error instanceof TypeError && error.cause === undefined) return undefined;
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
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const enqueued = await rawClient(server.url, 'prod-token-0123456789').jobs.enqueue.mutate({
      name: 'sendEmail',
      version: 1,
      payload: email,
    });
    expect(enqueued.created).toBe(true);
  };

  /** A job held under a real lease, so that fenced writes (complete, fail, progress, …) reach the store. */
  const hold = async (): Promise<Lease> => {
    await rawClient(server.url, 'prod-token-0123456789').jobs.enqueue.mutate({
      name: 'sendEmail',
      version: 1,
      payload: email,
    });
    const claimed = await rawClient(server.url, 'work-token-0123456789').consumer.claim.mutate({
      name: 'sendEmail',
      maxVersion: 1,
      limit: 1,
      workerId: 'fuzz',
    });
    const job = claimed.jobs[0];
    if (!job) throw new Error('nothing to claim');
    return { id: job.id, leaseToken: job.leaseToken };
  };

  it('refuses the reported cases with the same status, code and message on every store', async () => {
    const rest = async (path: string, body: string, type = 'application/json') => {
      const answer = await send({ method: 'POST', path, contentType: type, token: 'root-token-0123456789', body });
      return {
        status: answer?.status,
        body: JSON.parse(answer?.text ?? '{}') as { error?: { code: string; message: string } },
      };
    };
    const envelope = (payload: unknown) => JSON.stringify({ version: 1, payload });
    expect(await rest('/v1/jobs/%E0%A4%A', envelope(email))).toMatchObject({
      status: 400,
      body: { error: { code: 'VALIDATION', message: expect.stringContaining('percent-encoding') } },
    });
    expect(await rest('/v1/jobs/sendEmail', envelope({ ...email, body: 'a\ud800b' }))).toEqual({
      status: 400,
      body: {
        error: {
          code: 'VALIDATION',
          message:
            'Payload of "sendEmail" contains a lone UTF-16 surrogate at body: half of a pair (\\uD800-\\uDFFF), which is not valid Unicode and job stores cannot keep; send well-formed text.',
          details: [{ path: ['body'], message: expect.any(String) }],
        },
      },
    });
    const deepText = `{"version":1,"payload":{"to":"a@example.com","subject":"s","body":"b","extra":${'['.repeat(5_000)}${']'.repeat(5_000)}}}`;
    expect(await rest('/v1/jobs/sendEmail', deepText)).toMatchObject({
      status: 400,
      body: { error: { code: 'VALIDATION', message: expect.stringContaining('more than 64 levels deep') } },
    });
    expect(await rest('/v1/jobs/sendEmail', envelope(email), 'text/plain')).toMatchObject({
      status: 415,
      body: { error: { code: 'VALIDATION' } },
    });
    const overTrpc = await send({
      method: 'POST',
      path: '/trpc/jobs.enqueue',
      contentType: 'text/plain',
      token: 'root-token-0123456789',
      body: JSON.stringify({ json: { name: 'sendEmail', version: 1, payload: email } }),
    });
    expect(overTrpc?.status).toBe(415);
    expect(overTrpc?.text).toContain('"workqCode":"VALIDATION"');
    // A charset is fine, and so are queries, which have no body and no content type.
    expect((await rest('/v1/jobs/sendEmail', envelope(email), 'application/json; charset=utf-8')).status).toBe(201);
    const client = rawClient(server.url, 'root-token-0123456789');
    const { id } = await client.jobs.enqueue.mutate({ name: 'sendEmail', version: 1, payload: email });
    await expect(client.jobs.get.query({ id })).resolves.toMatchObject({ id, state: 'ready' });
  });

  it('answers any plain HTTP enqueue with a client error or success, never a server fault', async () => {
    const body = fc.oneof(
      {
        weight: 4,
        arbitrary: fc
          .record({ changes: editsOf(validEnvelope), levels: depth })
          .map(({ changes, levels }) => bodyText(applyEdits(validEnvelope, changes), levels)),
      },
      fc.oneof(nasty, fc.constantFrom('', '{', '[]', 'null', '{"version":1}')),
    );
    const request = fc.record({
      method: fc.constantFrom('POST', 'POST', 'POST', 'POST', 'GET', 'PUT'),
      path: fc.oneof(
        { weight: 4, arbitrary: segment.map((name) => `/v1/jobs/${name}`) },
        fc.constantFrom('/v1/', '/v1/jobs/', '/v1/jobs/sendEmail/extra', '/v1/jobs/sendEmail?x=%'),
      ),
      contentType,
      token,
      body,
    });
    await fc.assert(
      fc.asyncProperty(request, async (sent) => {
        expectClientAnswer(await send(sent), JSON.stringify({ ...sent, body: sent.body.slice(0, 300) }));
      }),
      { numRuns: RUNS },
    );
    await expectStillServing();
  });

  it('answers any tRPC mutation with a client error or success, alone and in a batch', async () => {
    const call = fc.constantFrom(...PROCEDURES).chain((procedure) =>
      fc.record({
        procedure: fc.constant(procedure),
        changes: editsOf(validInput(procedure, SOME_LEASE)),
        levels: depth,
        held: fc.boolean(),
        batch: fc.boolean(),
        contentType,
        token,
      }),
    );
    await fc.assert(
      fc.asyncProperty(call, async ({ procedure, changes, levels, held, batch, ...sent }) => {
        const lease = held ? await hold() : { id: crypto.randomUUID(), leaseToken: crypto.randomUUID() };
        // Through superjson, as clients send it: dates, bigints and the like travel as what they are.
        const envelope = wire(applyEdits(validInput(procedure, lease), changes));
        const body = bodyText(batch ? { 0: envelope, 1: envelope } : envelope, levels);
        const path = batch ? `/trpc/${procedure},${procedure}?batch=1` : `/trpc/${procedure}`;
        expectClientAnswer(await send({ method: 'POST', path, body, ...sent }), `${path} ${body.slice(0, 300)}`);
      }),
      { numRuns: RUNS },
    );
    await expectStillServing();
  });

  it('answers any tRPC query or odd path with a client error or success', async () => {
    const input = fc.oneof(
      fc
        .record(
          { id: fc.oneof(fc.uuid(), nasty), timeoutMs: fc.nat({ max: 20 }), name: nasty, cursor: nasty },
          {
            requiredKeys: [],
          },
        )
        .map((json) => percentEncode(JSON.stringify({ json }))),
      nasty.map(percentEncode),
      fc.constantFrom('%7B', '%E0%A4%A', '%7B%22json%22%3A%7B%22id%22%3A%22%5Cu0000%22%7D%7D'),
    );
    const query = fc.record({
      path: fc.oneof(
        fc.constantFrom('jobs.get', 'jobs.wait', 'admin.list', 'admin.stats', 'admin.schedules', 'schemas.list'),
        segment,
      ),
      input,
      batch: fc.boolean(),
      contentType,
      token,
    });
    await fc.assert(
      fc.asyncProperty(query, async ({ path, input: encoded, batch, ...sent }) => {
        const url = batch ? `/trpc/${path},${path}?batch=1&input=${encoded}` : `/trpc/${path}?input=${encoded}`;
        expectClientAnswer(await send({ method: 'GET', path: url, ...sent }), url);
      }),
      { numRuns: RUNS },
    );
    await expectStillServing();
  });

  it('answers any schema registration with a client error or success, never holding the event loop 100 ms', async () => {
    const registration = fc.record({
      name: fc.constantFrom('fuzzSchema', 'sendEmail', 'imageConvert', 'otherFuzzSchema'),
      version: fc.integer({ min: 1, max: 40 }),
      jsonSchema: generatedSchema,
      levels: depth,
      token: fc.constantFrom('register-token-0123456789', 'root-token-0123456789'),
    });
    await fc.assert(
      fc.asyncProperty(registration, async ({ levels, token: sentWith, ...input }) => {
        // Made before the measurement: only the server's work on it counts.
        const body = bodyText(wire({ schemas: [input] }), levels);
        const request = { method: 'POST', path: '/trpc/schemas.register', contentType: 'application/json' };
        const { outcome, blockedMs } = await blockedDuring(() => send({ ...request, token: sentWith, body }));
        expectClientAnswer(outcome, body.slice(0, 300));
        expect(blockedMs, body.slice(0, 300)).toBeLessThan(100);
      }),
      { numRuns: RUNS / 2 },
    );
    await expectStillServing();
  });
});
