import { catalogJsonSchemas } from '@workq/core';
import type { QueueServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { blockedDuring } from '../support/event-loop.ts';
import {
  applyEdits,
  bodyText,
  contentType,
  DEEP,
  depth,
  editsOf,
  email,
  hostileTarget,
  type Lease,
  nasty,
  nastyJson,
  pathsOf,
  percentEncode,
  RUNS,
  segment,
  startHostileServer,
  type TrpcCalls,
  token,
  wire,
} from '../support/hostile-input.ts';
import { rawClient } from '../support/raw-client.ts';
import { describeEachStore, E2E_STORES, type FreshStore } from '../support/stores.ts';

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
    server = await startHostileServer(target.url);
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  const { send, expectClientAnswer, expectEveryCallAnswered, expectStillServing, hold } = hostileTarget(
    () => server.url,
  );

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
    const writes: TrpcCalls = Object.fromEntries(
      PROCEDURES.map((path) => [path, { path, held: true, input: (lease: Lease) => validInput(path, lease) }]),
    );
    await expectEveryCallAnswered(writes, async (held) =>
      held ? hold() : { id: crypto.randomUUID(), leaseToken: crypto.randomUUID() },
    );
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
