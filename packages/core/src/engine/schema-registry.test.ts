import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineCatalog } from '../contract/define-catalog.ts';
import { defineJob } from '../contract/define-job.ts';
import { isWorkqError, type WorkqError } from '../errors.ts';
import { systemClock } from './clock.ts';
import { fingerprintOf, SchemaRegistry, type SchemaRegistryOptions } from './schema-registry.ts';
import type { SchemaEntry, Store } from './store.ts';

/** The schema registry's part of a store, in memory, first writer wins; `rows` are written straight, as by hand. */
function registryStore() {
  const rows = new Map<string, SchemaEntry>();
  const store = {
    registerSchema: async (entry: SchemaEntry) => {
      const key = `${entry.name}@${entry.version}`;
      if (!rows.has(key)) rows.set(key, entry);
      return rows.get(key) as SchemaEntry;
    },
    listSchemas: async (name?: string) =>
      [...rows.values()]
        .filter((entry) => name === undefined || entry.name === name)
        .sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version),
  };
  const write = (name: string, version: number, jsonSchema: unknown) =>
    rows.set(`${name}@${version}`, {
      name,
      version,
      jsonSchema,
      fingerprint: fingerprintOf(jsonSchema),
      registeredAt: new Date(),
    });
  return { store: store as unknown as Store, rows, write };
}

function registryOver(options: SchemaRegistryOptions = {}) {
  const warnings: { message: string; reason: string }[] = [];
  const backing = registryStore();
  const registry = new SchemaRegistry(backing.store, systemClock, undefined, {
    warn: (message, { reason }) => warnings.push({ message, reason }),
    ...options,
  });
  return { registry, warnings, ...backing };
}

async function failure(call: Promise<unknown>): Promise<WorkqError> {
  const error = await call.then(
    () => {
      throw new Error('expected the call to fail, but it succeeded');
    },
    (e: unknown) => e,
  );
  if (!isWorkqError(error)) throw error;
  return error;
}

const asyncSchema = { $async: true, type: 'object', required: ['x'] };

describe('SchemaRegistry with untrusted schemas', () => {
  it("checks every payload of a batch against the catalog's schema, naming the first that fails by its place", async () => {
    const catalog = defineCatalog({ counted: defineJob({ version: 1, payload: z.object({ n: z.number().int() }) }) });
    const registry = new SchemaRegistry(registryStore().store, systemClock, catalog);
    await registry.validateAll('counted', 1, [{ n: 1 }, { n: 2 }]);
    const error = await failure(registry.validateAll('counted', 1, [{ n: 1 }, { n: 2 }, { n: 'three' }, { n: 0.5 }]));
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toMatch(/^Payload 3 of 4 of "counted" v1 is invalid:/);
    expect(error.details).toEqual([expect.objectContaining({ path: ['n'] })]);
  });

  it('refuses an async schema at registration, and stores nothing', async () => {
    const { registry, rows } = registryOver();
    const error = await failure(registry.register([{ name: 'imageConvert', version: 7, jsonSchema: asyncSchema }]));
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toContain('keyword "$async" is not allowed');
    expect(rows.size).toBe(0);
  });

  it('never compiles an async schema already in the store: its payloads get UNSUPPORTED_VERSION, with one warning', async () => {
    const { registry, warnings, write } = registryOver();
    write('imageConvert', 7, asyncSchema);
    for (const payload of [{}, { x: 1 }]) {
      const error = await failure(registry.validateAll('imageConvert', 7, [payload]));
      expect(error.code).toBe('UNSUPPORTED_VERSION');
      expect(error.message).toContain('its stored JSON Schema was refused');
      expect(error.message).toContain('workq schemas remove imageConvert 7');
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.reason).toContain('keyword "$async" is not allowed');
  });

  it('skips a refused stored version when registering it again (so a server starts over it), warning once', async () => {
    const { registry, warnings, write } = registryOver();
    write('imageConvert', 7, asyncSchema);
    const entries = await registry.register([
      { name: 'imageConvert', version: 7, jsonSchema: { type: 'object' } },
      { name: 'imageConvert', version: 8, jsonSchema: { type: 'object' } },
    ]);
    expect(entries.map((entry) => entry.version)).toEqual([8]);
    await registry.register([{ name: 'imageConvert', version: 7, jsonSchema: { type: 'object' } }]);
    expect(warnings).toHaveLength(1);
  });

  it('refuses a stored schema the compiler cannot compile the same way', async () => {
    const { registry, warnings, write } = registryOver();
    write('sendEmail', 2, { type: 'bogus' });
    expect((await failure(registry.validateAll('sendEmail', 2, [{}]))).code).toBe('UNSUPPORTED_VERSION');
    expect((await failure(registry.validateAll('sendEmail', 2, [{}]))).code).toBe('UNSUPPORTED_VERSION');
    expect(warnings).toHaveLength(1);
  });

  it('checks a conflict against the stored entry before compiling the new schema', async () => {
    const { registry, write } = registryOver();
    write('sendEmail', 1, { type: 'object' });
    // A large schema, answered CONFLICT without being compiled.
    const properties = Object.fromEntries(
      Array.from({ length: 1_000 }, (_, i) => [`f${i}`, { type: 'string', minLength: i }]),
    );
    const started = performance.now();
    for (let i = 0; i < 20; i++) {
      const jsonSchema = { type: 'object', properties, required: [`f${i}`] };
      const error = await failure(registry.register([{ name: 'sendEmail', version: 1, jsonSchema }]));
      expect(error.code).toBe('CONFLICT');
    }
    // Compiling each (before the conflict check) took about 0.8 s apiece here.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('runs a registered pattern in linear time', async () => {
    const { registry } = registryOver();
    const jsonSchema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } };
    await registry.register([{ name: 'redos', version: 1, jsonSchema }]);
    const started = performance.now();
    const error = await failure(
      registry.validateAll('redos', 1, [{ s: `${'a'.repeat(28)}!` }, { s: 'a'.repeat(5_000) }]),
    );
    expect(error.code).toBe('VALIDATION');
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('caps the versions of one job type and the job types of the store, counted from the store', async () => {
    const { registry, write } = registryOver({ limits: { maxVersionsPerJob: 2, maxJobTypes: 2 } });
    write('a', 1, {});
    write('a', 2, {});
    write('b', 1, {});
    const versions = await failure(registry.register([{ name: 'a', version: 3, jsonSchema: {} }]));
    expect(versions.message).toContain('Job "a" has 2 registered versions, the most this server accepts');
    const types = await failure(registry.register([{ name: 'c', version: 1, jsonSchema: {} }]));
    expect(types.message).toContain('The store has schemas of 2 job types, the most this server accepts');
    await expect(registry.register([{ name: 'b', version: 2, jsonSchema: {} }])).resolves.toHaveLength(1);
  });

  it('refuses a schema the meta-schema refuses before reading a conflicting entry', async () => {
    const { registry, write } = registryOver();
    write('sendEmail', 1, { type: 'object', required: ['to'] });
    const error = await failure(
      registry.register([{ name: 'sendEmail', version: 1, jsonSchema: { required: { a: 1 } } }]),
    );
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toContain('is not a valid JSON Schema: schema/required must be array');
  });

  it('registers again, unchanged, a schema stored before (the fingerprint is that of the schema)', async () => {
    const { registry, write } = registryOver();
    const jsonSchema = { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] };
    write('sendEmail', 1, jsonSchema);
    await expect(registry.register([{ name: 'sendEmail', version: 1, jsonSchema }])).resolves.toMatchObject([
      { name: 'sendEmail', version: 1, fingerprint: fingerprintOf(jsonSchema) },
    ]);
  });

  it('refuses a schema past the size limit', async () => {
    const { registry } = registryOver({ limits: { maxSchemaBytes: 1_000 } });
    const jsonSchema = { type: 'object', description: 'x'.repeat(2_000) };
    const error = await failure(registry.register([{ name: 'big', version: 1, jsonSchema }]));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
  });
});
