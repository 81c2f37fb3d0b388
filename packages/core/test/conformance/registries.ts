import { expect, it } from 'vitest';
import { type SchemaEntry, WORKER_REGISTRY_BOUNDS, type WorkerPresence } from '../../src/engine/store.ts';
import type { SuiteContext } from './context.ts';

/** Room in the worker registry for every worker these tests record. */
const ROOM = { maxWorkers: WORKER_REGISTRY_BOUNDS.maxWorkers, idleBefore: new Date(0) };

/**
 * A consumer's presence as `recordWorker` takes it: by default a process on `host-a` started 30 seconds
 * before it was seen, consuming version 1 of its job type.
 */
function workerPresence(
  fields: Pick<WorkerPresence, 'id' | 'name' | 'seenAt'> & Partial<WorkerPresence>,
): WorkerPresence {
  return {
    host: 'host-a',
    minVersion: 1,
    maxVersion: 1,
    pid: 4242,
    startedAt: new Date(fields.seenAt.getTime() - 30_000),
    ...fields,
  };
}

/** The schema registry and the worker registry, through the store interface. */
export function registerRegistryTests(ctx: SuiteContext): void {
  it('registerSchema keeps the first entry per (name, version); listSchemas orders by name then version', async () => {
    const name = ctx.jobName('schema-b');
    const firstName = ctx.jobName('schema-a').replace(/^t/, 'a');
    const at = new Date('2026-01-01T00:00:00.000Z');
    const jsonSchema = { type: 'object', properties: { source: { type: 'string' } }, required: ['source'] };
    const entry: SchemaEntry = { name, version: 2, fingerprint: 'fp-v2', jsonSchema, registeredAt: at };
    const { store } = ctx.engine();

    expect(await store.registerSchema(entry)).toEqual(entry);
    const changed = { ...entry, fingerprint: 'fp-other', jsonSchema: { type: 'string' }, registeredAt: new Date() };
    expect(await store.registerSchema(changed)).toEqual(entry);
    const v1: SchemaEntry = {
      name,
      version: 1,
      fingerprint: 'fp-v1',
      jsonSchema: { type: 'object' },
      registeredAt: at,
    };
    await store.registerSchema(v1);
    const other: SchemaEntry = { ...v1, name: firstName, fingerprint: 'fp-a' };
    await store.registerSchema(other);

    expect(await store.listSchemas(name)).toEqual([v1, entry]);
    const all = (await store.listSchemas()).filter((s) => s.name === name || s.name === firstName);
    expect(all).toEqual([other, v1, entry]);
  });

  it('concurrent registrations of one schema keep exactly one entry', async () => {
    const name = ctx.jobName('schema-race');
    const stores = await ctx.clientStores(4);
    const entries = stores.map((store, i): [typeof store, SchemaEntry] => [
      store,
      {
        name,
        version: 1,
        fingerprint: `fp-${i}`,
        jsonSchema: { i },
        registeredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      },
    ]);
    const stored = await Promise.all(entries.map(([store, entry]) => store.registerSchema(entry)));
    const winner = (await stores[0]!.listSchemas(name))[0];
    expect(await stores[0]!.listSchemas(name)).toHaveLength(1);
    expect(stored.every((s) => s.fingerprint === winner?.fingerprint)).toBe(true);
  });

  it('removeSchema deletes one (name, version) only, says whether it was there, and frees the version', async () => {
    const name = ctx.jobName('schema-removed');
    const at = new Date('2026-01-01T00:00:00.000Z');
    const squatted: SchemaEntry = {
      name,
      version: 3,
      fingerprint: 'fp-squat',
      jsonSchema: { type: 'string' },
      registeredAt: at,
    };
    const kept: SchemaEntry = { ...squatted, version: 2, fingerprint: 'fp-v2', jsonSchema: { type: 'object' } };
    const { store } = ctx.engine();
    await store.registerSchema(kept);
    await store.registerSchema(squatted);

    expect(await store.removeSchema(name, 3)).toBe(true);
    expect(await store.removeSchema(name, 3)).toBe(false);
    expect(await store.removeSchema(ctx.jobName('schema-never'), 1)).toBe(false);
    expect(await store.listSchemas(name)).toEqual([kept]);
    const real: SchemaEntry = {
      ...squatted,
      fingerprint: 'fp-real',
      jsonSchema: { type: 'object' },
      registeredAt: new Date(at.getTime() + 1_000),
    };
    expect(await store.registerSchema(real)).toEqual(real);
    expect(await store.listSchemas(name)).toEqual([kept, real]);
  });

  it('recordWorker upserts a consumer’s presence; listWorkers returns those seen since a time', async () => {
    const { store } = ctx.engine();
    const id = ctx.jobName('worker');
    const name = ctx.jobName('worker-job');
    const base = Date.UTC(2026, 0, 1);
    const first = workerPresence({ id, name, maxVersion: 2, seenAt: new Date(base) });
    await store.recordWorker(first, ROOM);
    const stale: WorkerPresence = {
      ...first,
      id: ctx.jobName('worker-stale'),
      pid: null,
      startedAt: null,
      seenAt: new Date(base - 60_000),
    };
    await store.recordWorker(stale, ROOM);
    const again: WorkerPresence = {
      ...first,
      host: 'host-b',
      maxVersion: 3,
      pid: 4343,
      seenAt: new Date(base + 5_000),
    };
    await store.recordWorker(again, ROOM);

    const mine = (seen: WorkerPresence[]) => seen.filter((w) => w.id === id || w.id === stale.id);
    expect(mine(await store.listWorkers(new Date(base - 1_000)))).toEqual([again]);
    expect(mine(await store.listWorkers(new Date(base + 5_000)))).toEqual([again]);
    expect(mine(await store.listWorkers(new Date(base + 5_001)))).toEqual([]);
    const withStale = mine(await store.listWorkers(new Date(base - 60_000)));
    expect(withStale.sort((a, b) => a.seenAt.getTime() - b.seenAt.getTime())).toEqual([stale, again]);
  });

  it('touchWorkers moves the last-seen time of known consumers forward only, and inserts none', async () => {
    const { store } = ctx.engine();
    const base = Date.UTC(2026, 0, 2);
    const busy = workerPresence({
      id: ctx.jobName('worker-busy'),
      name: ctx.jobName('worker-busy-job'),
      seenAt: new Date(base),
    });
    await store.recordWorker(busy, ROOM);
    const unknown = ctx.jobName('worker-unknown');

    await store.touchWorkers([busy.id, unknown], new Date(base + 10_000));
    await store.touchWorkers([busy.id], new Date(base + 2_000));
    await store.touchWorkers([], new Date(base + 20_000));

    const seen = (await store.listWorkers(new Date(base - 1))).filter((w) => w.id === busy.id || w.id === unknown);
    expect(seen).toEqual([{ ...busy, seenAt: new Date(base + 10_000) }]);
  });
}
