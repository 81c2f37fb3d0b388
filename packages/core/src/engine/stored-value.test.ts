import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { validationError } from '../../test/support/fixtures.ts';
import {
  fromStoredValue,
  MAX_STORED_DEPTH,
  plainStoredBytesBound,
  toStoredText,
  toStoredValue,
} from './stored-value.ts';

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

describe("the bound on a plain value's stored size", () => {
  const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

  it('is at least the UTF-8 bytes of its JSON text, whatever the text escapes', () => {
    const values: unknown[] = [
      { n: 1 },
      { text: 'a"b\\c\n\u0001\u001f', 'k\u00e9"y': 'v' },
      { wide: '\u00fc\u20ac\uffff', keys: { '\u20ac\u20ac': ['\u0007'.repeat(50)] } },
      [1.7976931348623157e308, -2.2250738585072014e-308, -1e21, 0.1, -123456789.12345678],
      { nested: [true, false, null, 'x', [], {}], skipped: undefined },
      '',
      0,
      [],
    ];
    for (const value of values) {
      const bound = plainStoredBytesBound(value);
      expect(bound, JSON.stringify(value)).toBeGreaterThanOrEqual(bytesOf(value));
    }
  });

  it('is undefined for a value toStoredValue encodes or refuses, which then takes the full walk', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    let deep: unknown = 1;
    for (let i = 0; i <= MAX_STORED_DEPTH; i++) deep = [deep];
    const shared = { leaf: [1] };
    const many = Array.from({ length: 10_001 }, () => shared);
    const values: unknown[] = [
      new Date(0),
      { id: 1n },
      new Map(),
      { ratio: Number.NaN },
      [-0],
      [1, undefined],
      { __superjson: 1 },
      { text: 'a\u0000b' },
      { 'k\u0000': 1 },
      { text: 'lone \ud800' },
      { text: 'a pair \ud83d\ude00' },
      cycle,
      deep,
      many,
      new (class Point {
        x = 1;
      })(),
    ];
    for (const value of values) expect(plainStoredBytesBound(value)).toBeUndefined();
  });
});

describe('values no store can keep', () => {
  const refusal = (value: unknown): string =>
    validationError(() => toStoredValue(value, 'Payload of "sendEmail"')).message;

  it('refuses a lone surrogate anywhere, naming where, and keeps well-formed pairs', () => {
    expect(refusal({ body: 'a\ud800b' })).toMatch(/^Payload of "sendEmail" contains a lone UTF-16 surrogate at body:/);
    expect(refusal({ list: ['ok', { deep: '\udc00' }] })).toMatch(/at list\.1\.deep/);
    expect(refusal({ 'key\udbff': 1 })).toMatch(/lone UTF-16 surrogate in the key key\uFFFD/);
    expect(refusal(new Map([['x', '\ud800']]))).toMatch(/lone UTF-16 surrogate/);
    const emoji = { text: '👩🏽‍💻 \udbff\udfff' };
    expect(throughJson(emoji)).toEqual(emoji);
  });

  it('refuses a NUL character, but not the text "\\u0000"', () => {
    expect(refusal({ body: 'a\u0000b' })).toMatch(/NUL character \(\\u0000\) at body/);
    expect(refusal(['\u0000'])).toMatch(/at 0/);
    expect(throughJson({ body: '\\u0000' })).toEqual({ body: '\\u0000' });
  });

  it(`keeps ${MAX_STORED_DEPTH} levels of nesting and refuses one more, without deep recursion`, () => {
    const nested = (levels: number): unknown => {
      let value: unknown = 1;
      for (let i = 0; i < levels; i++) value = [value];
      return value;
    };
    expect(throughJson(nested(MAX_STORED_DEPTH))).toEqual(nested(MAX_STORED_DEPTH));
    expect(refusal(nested(MAX_STORED_DEPTH + 1))).toMatch(/more than 64 levels deep/);
    expect(refusal(nested(100_000))).toMatch(/more than 64 levels deep/);
    expect(refusal({ at: new Date(0), deep: nested(100_000) })).toMatch(/more than 64 levels deep/);
  });

  it('encodes shared and circular references once, however many paths reach them', () => {
    const circular: Record<string, unknown> = { name: 'loop' };
    circular.self = circular;
    const back = throughJson(circular) as Record<string, unknown>;
    expect(back.self).toBe(back);
    // A million paths through 20 shared arrays: walked and stored once each.
    let shared: unknown = ['leaf'];
    for (let i = 0; i < 20; i++) shared = [shared, shared];
    expect(JSON.stringify(toStoredValue(shared)).length).toBeLessThan(10_000);
  });

  it('turns the same characters into U+FFFD in free text such as error messages', () => {
    expect(toStoredText('plain')).toBe('plain');
    expect(toStoredText('a\u0000b\ud800c\udbff\udfff')).toBe('a\uFFFDb\uFFFDc\udbff\udfff');
  });
});
