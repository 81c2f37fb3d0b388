import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { fromStoredValue, toStoredValue } from './stored-value.ts';

/** What a store hands back: the stored value after a trip through JSON text. */
const throughJson = (value: unknown): unknown => fromStoredValue(JSON.parse(JSON.stringify(toStoredValue(value))));

describe('stored values', () => {
  it('keeps plain JSON as it is, so the database holds readable JSON', () => {
    const plain = { source: 'in/ü.png', nested: { list: [1, 'two', null, true, { deep: [] }] }, big: 2 ** 53 - 1 };
    expect(toStoredValue(plain)).toBe(plain);
    expect(throughJson(plain)).toEqual(plain);
    expect(toStoredValue(undefined)).toBeNull();
  });

  it('keeps what JSON would change: bigint, Date, Map, Set, NaN, -0, undefined in arrays', () => {
    const typed = {
      id: 12_345_678_901_234_567_890n,
      negative: -(2n ** 70n),
      at: new Date('2030-01-02T03:04:05.678Z'),
      counts: new Map([['a', 1]]),
      tags: new Set(['x', 'y']),
      ratio: Number.NaN,
      zero: -0,
      holes: [1, undefined, 3],
    };
    const back = throughJson(typed) as typeof typed;
    expect(back).toEqual(typed);
    expect(typeof back.id).toBe('bigint');
    expect(back.at).toBeInstanceOf(Date);
    expect(Object.is(back.zero, -0)).toBe(true);
    expect(throughJson(7n)).toBe(7n);
  });

  it('never mistakes a plain payload for an encoded one', () => {
    const lookalike = { __superjson: superjson.serialize({ id: 1n }) };
    expect(throughJson(lookalike)).toEqual(lookalike);
    expect(throughJson({ __superjson: 1, other: 2 })).toEqual({ __superjson: 1, other: 2 });
  });

  it('encodes class instances and shared references through superjson', () => {
    const shared = { n: 1 };
    expect(throughJson({ a: shared, b: shared })).toEqual({ a: { n: 1 }, b: { n: 1 } });
    expect(toStoredValue(new Date(0))).not.toBeInstanceOf(Date);
  });
});
