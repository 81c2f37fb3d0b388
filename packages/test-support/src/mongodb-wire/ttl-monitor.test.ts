import { describe, expect, it } from 'vitest';
import { refusalOf as refusal, wireDoubleSuite } from './suite-double.ts';

const HOUR_MS = 3_600_000;

/** The TTL monitor as the server runs it, one pass at a time, and the TTL indexes the server refuses. */
describe('MongoDB wire double: TTL indexes', () => {
  const wire = wireDoubleSuite();

  it('expires dates older than the TTL, an array by its earliest date, and never a value that is no date', async () => {
    const items = wire.client.db('wire').collection<{ _id: string; at?: unknown }>('ttl_values');
    await items.createIndex({ at: 1 }, { name: 'at_ttl', expireAfterSeconds: 3_600 });
    const now = new Date('2030-01-01T12:00:00.000Z');
    const ago = (ms: number) => new Date(now.getTime() - ms);
    await items.insertMany([
      { _id: 'old', at: ago(HOUR_MS + 1) },
      { _id: 'exactly', at: ago(HOUR_MS) },
      { _id: 'young', at: ago(HOUR_MS - 1) },
      { _id: 'array', at: [ago(0), ago(2 * HOUR_MS)] },
      { _id: 'young-array', at: [ago(0)] },
      { _id: 'number', at: ago(2 * HOUR_MS).getTime() },
      { _id: 'text', at: ago(2 * HOUR_MS).toISOString() },
      { _id: 'none' },
    ]);
    expect(wire.double.runTtlMonitor(now)).toBe(3);
    const left = (await items.find({}).toArray()).map((doc) => doc._id).sort();
    expect(left).toEqual(['none', 'number', 'text', 'young', 'young-array']);
  });

  it('expires only what a partial TTL index holds, and runs on the primary clock unless told a time', async () => {
    const items = wire.client.db('wire').collection<{ _id: string; at: Date; marked?: boolean }>('ttl_partial');
    await items.createIndex(
      { at: 1 },
      { name: 'at_marked_ttl', expireAfterSeconds: 60, partialFilterExpression: { marked: true } },
    );
    const longAgo = new Date(Date.now() - 10 * HOUR_MS);
    await items.insertMany([
      { _id: 'marked', at: longAgo, marked: true },
      { _id: 'unmarked', at: longAgo },
      { _id: 'marked-false', at: longAgo, marked: false },
    ]);
    const watch = items.watch();
    expect(await watch.tryNext()).toBeNull();
    expect(wire.double.runTtlMonitor()).toBe(1);
    expect(await watch.next()).toMatchObject({ operationType: 'delete', documentKey: { _id: 'marked' } });
    await watch.close();
    expect((await items.find({}).toArray()).map((doc) => doc._id).sort()).toEqual(['marked-false', 'unmarked']);
    expect(wire.double.runTtlMonitor()).toBe(0);
  });

  it('refuses the TTL indexes the server refuses, with its codes', async () => {
    const items = wire.client.db('wire').collection('ttl_refused');
    const compound = await refusal(items.createIndex({ a: 1, b: 1 }, { expireAfterSeconds: 60 }));
    expect(compound).toMatchObject({ code: 67, message: expect.stringContaining('single-field') });
    expect(await refusal(items.createIndex({ _id: 1 }, { expireAfterSeconds: 60 }))).toMatchObject({
      code: 197,
      message: expect.stringContaining("'expireAfterSeconds' is not valid for an _id index"),
    });
    expect((await refusal(items.createIndex({ a: 1 }, { expireAfterSeconds: -1 }))).code).toBe(67);
    expect((await refusal(items.createIndex({ a: 1 }, { expireAfterSeconds: 2 ** 31 }))).code).toBe(67);
    const text = { expireAfterSeconds: '60' } as unknown as { expireAfterSeconds: number };
    expect(await refusal(items.createIndex({ a: 1 }, text))).toMatchObject({
      code: 67,
      message: expect.stringContaining('must be numeric'),
    });
    await items.createIndex({ a: 1 }, { name: 'a_ttl', expireAfterSeconds: 2 ** 31 - 1 });
    const names = (await items.listIndexes().toArray()).map((index) => index.name);
    expect(names.sort()).toEqual(['_id_', 'a_ttl']);
  });
});
