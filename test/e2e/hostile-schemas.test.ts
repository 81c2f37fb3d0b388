import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Catalog, catalogJsonSchemas } from '@workq/core';
import { DEFAULT_SCHEMA_LIMITS, fingerprintOf, openStore, type Store } from '@workq/core/engine';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchJobs } from '../../bench/src/systems/bench-jobs.ts';
import { chaosJobs } from '../chaos/catalog.ts';
import { jobs as foreignJobs } from '../fixtures/foreign-project/src/catalog.ts';
import { blockedDuring } from '../support/event-loop.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient, rawFailure } from '../support/raw-client.ts';
import { describeEachStore, E2E_STORES, type FreshStore } from '../support/stores.ts';

const ADMIN = 'admin-token-0123456789';
const PRODUCER = 'produce-token-0123456789';
const TOKENS = [
  { token: ADMIN, scopes: ['admin'] },
  { token: PRODUCER, scopes: ['produce:*'] },
];
const asyncSchema = { $async: true, type: 'object', required: ['x'] };

async function post(server: QueueServer, path: string, body: unknown, token = ADMIN) {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { error?: { code: string; message: string } } };
}

/** Writes a schema row straight into the store, as one written before the registry's checks (or by hand). */
async function plantSchema(store: Store, name: string, version: number, jsonSchema: Record<string, unknown>) {
  await store.registerSchema({
    name,
    version,
    jsonSchema,
    fingerprint: fingerprintOf(jsonSchema),
    registeredAt: new Date(),
  });
}

describe('the catalogs in this repository', () => {
  const catalogs: Record<string, Catalog> = { schemas: jobs, chaos: chaosJobs, bench: benchJobs, foreign: foreignJobs };
  it.each(Object.keys(catalogs))('%s registers on a server with the default schema limits', async (label) => {
    const server = await startServer({ store: 'pglite://memory', port: 0, tokens: TOKENS, logger: collectingLogger() });
    try {
      const schemas = catalogJsonSchemas(catalogs[label] as Catalog);
      const entries = await rawClient(server.url, ADMIN).schemas.register.mutate({ schemas });
      expect(entries).toHaveLength(schemas.length);
    } finally {
      await server.close();
    }
  });
});

await describeEachStore(E2E_STORES, 'hostile schemas over $label', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;
  const logger = collectingLogger();

  beforeAll(async () => {
    target = await open();
    // The crashing schema, already in the store before the server starts (written before these checks).
    const store = await openStore(target.url);
    await plantSchema(store, 'imageConvert', 7, asyncSchema);
    // An in-memory store is handed over as it is; any other is closed and opened again by the server.
    if (target.url !== 'pglite://memory') await store.close();
    server = await startServer({
      store: target.url === 'pglite://memory' ? store : target.url,
      port: 0,
      tokens: TOKENS,
      jobs,
      logger,
    });
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  it('starts over a stored async schema, warns once, refuses its payloads, and serves the next request', async () => {
    for (const payload of [{}, { x: 1 }, {}]) {
      const answer = await post(server, '/v1/jobs/imageConvert', { version: 7, payload });
      expect(answer.status).toBe(422);
      expect(answer.body.error?.code).toBe('UNSUPPORTED_VERSION');
      expect(answer.body.error?.message).toContain('its stored JSON Schema was refused');
    }
    const warnings = logger.lines.filter((line) => line.level === 'warn' && line.message.includes('imageConvert" v7'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields?.reason).toContain('keyword "$async" is not allowed');
    const valid = await post(server, '/v1/jobs/imageConvert', { version: 2, payload: { source: 'a', output: 'b' } });
    expect(valid.status).toBe(201);
  });

  it('refuses an async schema at registration', async () => {
    const refused = await rawFailure(
      rawClient(server.url, ADMIN).schemas.register.mutate({
        schemas: [{ name: 'imageConvert', version: 8, jsonSchema: asyncSchema }],
      }),
    );
    expect(refused.code).toBe('VALIDATION');
    expect(refused.message).toContain(
      'keyword "$async" is not allowed (asynchronous validation is not supported) at #/$async',
    );
    const answer = await post(server, '/v1/jobs/imageConvert', { version: 8, payload: {} });
    expect(answer.body.error?.code).toBe('UNSUPPORTED_VERSION');
  });

  it('runs a registered pattern in linear time: a ReDoS payload is refused without holding the event loop', async () => {
    const jsonSchema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } }, required: ['s'] };
    await rawClient(server.url, ADMIN).schemas.register.mutate({
      schemas: [{ name: 'redos', version: 1, jsonSchema }],
    });
    const { outcome, blockedMs } = await blockedDuring(() =>
      post(server, '/v1/jobs/redos', { version: 1, payload: { s: `${'a'.repeat(28)}!` } }),
    );
    expect(outcome.status).toBe(400);
    expect(outcome.body.error?.code).toBe('VALIDATION');
    expect(blockedMs).toBeLessThan(100);
    expect((await post(server, '/v1/jobs/redos', { version: 1, payload: { s: 'aaaa' } })).status).toBe(201);
  });

  it('refuses a 600 KB schema before compiling it', async () => {
    const properties = Object.fromEntries(
      Array.from({ length: 6_000 }, (_, i) => [
        `field${i}`,
        { type: 'string', minLength: 1, description: 'x'.repeat(50) },
      ]),
    );
    const jsonSchema = { type: 'object', properties, required: Object.keys(properties) };
    // Made before the measurement: only the server's work on it counts.
    const body = JSON.stringify({ json: { schemas: [{ name: 'huge', version: 1, jsonSchema }] } });
    expect(body.length).toBeGreaterThan(600_000);
    const { outcome, blockedMs } = await blockedDuring(() => post(server, '/trpc/schemas.register', body));
    expect(outcome.status).toBe(413);
    expect(JSON.stringify(outcome.body)).toContain(`more than ${DEFAULT_SCHEMA_LIMITS.maxSchemaBytes} bytes`);
    // Compiling it took 7 s or more; what is left is reading and decoding a 600 KB request body.
    expect(blockedMs).toBeLessThan(500);
  });

  it('refuses 3,000 conflicting registrations without keeping anything of them', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const client = rawClient(server.url, ADMIN);
    const schemaNumbered = (n: number) => ({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, { type: 'string', maxLength: n }])),
    });
    await client.schemas.register.mutate({
      schemas: [{ name: 'squatted', version: 1, jsonSchema: schemaNumbered(0) }],
    });
    const attempt = async (n: number) => {
      const refused = await rawFailure(
        client.schemas.register.mutate({ schemas: [{ name: 'squatted', version: 1, jsonSchema: schemaNumbered(n) }] }),
      );
      expect(refused.code).toBe('CONFLICT');
    };
    for (let n = 1; n <= 200; n++) await attempt(n);
    gc();
    const before = getHeapStatistics().used_heap_size;
    for (let n = 201; n <= 3_000; n += 10) await Promise.all(Array.from({ length: 10 }, (_, i) => attempt(n + i)));
    gc();
    const grownMiB = (getHeapStatistics().used_heap_size - before) / 2 ** 20;
    expect(grownMiB).toBeLessThan(8);
  });
});
