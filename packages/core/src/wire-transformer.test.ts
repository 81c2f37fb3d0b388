import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { wireTransformer } from './wire-transformer.ts';

/** What crosses the wire: the serialized form as JSON text. */
const overWire = (serialized: unknown): never => JSON.parse(JSON.stringify(serialized)) as never;

describe('the wire transformer', () => {
  const plain = { jobs: [{ id: 'a', payload: { n: 1, tags: ['x'], nested: { ok: true } }, leaseMs: 30_000 }] };
  const typed = { at: new Date('2030-01-01T00:00:00.000Z'), id: 2n ** 64n, seen: new Set([1]), plain };

  it('sends plain JSON as { json } without meta', () => {
    expect(wireTransformer.serialize(plain)).toEqual({ json: plain });
    expect(wireTransformer.serialize(plain)).toEqual(superjson.serialize(plain));
  });

  it('round-trips dates, bigints and sets through superjson', () => {
    const back = wireTransformer.deserialize(overWire(wireTransformer.serialize(typed)));
    expect(back).toEqual(typed);
  });

  it('speaks superjson in both directions, so a superjson client can call the server', () => {
    for (const value of [plain, typed, null, 'text', [1, 'two']]) {
      expect(superjson.deserialize(overWire(wireTransformer.serialize(value)))).toEqual(value);
      expect(wireTransformer.deserialize(overWire(superjson.serialize(value)))).toEqual(value);
    }
  });
});
