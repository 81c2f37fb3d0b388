import superjson from 'superjson';
import { describe, expect, it, vi } from 'vitest';
import { isWorkqError } from './errors.ts';
import { MAX_WIRE_DEPTH, wireTransformer } from './wire-transformer.ts';

/** The message as it arrives: superjson's output, through JSON text. */
const onTheWire = (value: unknown) => JSON.parse(JSON.stringify(superjson.serialize(value)));

/** How long `read` took, and what it threw (`undefined` when it did not). */
function timed(read: () => unknown): { ms: number; error: unknown } {
  const startedAt = performance.now();
  try {
    read();
    return { ms: performance.now() - startedAt, error: undefined };
  } catch (error) {
    return { ms: performance.now() - startedAt, error };
  }
}

describe('wireTransformer.deserialize', () => {
  it('reads back what superjson writes: dates, bigints, maps, sets, escaped keys, RegExps and URLs', () => {
    const value = {
      at: new Date(0),
      big: 12n ** 40n,
      byId: new Map([[1n, new Date(5)]]),
      tags: new Set([3n]),
      'dotted.key': { inner: 5n },
      pattern: /ab+/g,
      link: new URL('https://example.com/a'),
      gone: undefined,
    };
    expect(wireTransformer.deserialize(onTheWire(value))).toEqual(value);
  });

  it('refuses a 4 M-digit bigint with PAYLOAD_TOO_LARGE before parsing it', () => {
    const message = { json: { n: '9'.repeat(4_000_000) }, meta: { values: { n: ['bigint'] }, v: 1 } };
    const { ms, error } = timed(() => wireTransformer.deserialize(message as never));
    expect(isWorkqError(error, 'PAYLOAD_TOO_LARGE')).toBe(true);
    expect((error as Error).message).toMatch(/bigint .* 4000000 digits; at most 4096/);
    expect(ms).toBeLessThan(100);
  });

  it('refuses long Date, RegExp and URL texts, wherever they sit (inside a Map too)', () => {
    const cases = [
      { json: { at: `2020-01-01${' '.repeat(4_000_000)}` }, meta: { values: { at: ['Date'] }, v: 1 } },
      { json: { r: `/${'a'.repeat(5_000)}/` }, meta: { values: { r: ['regexp'] }, v: 1 } },
      { json: { m: [['9'.repeat(5_000), 1]] }, meta: { values: { m: ['map', { '0.0': ['bigint'] }] }, v: 1 } },
      { json: { 'a.b': '9'.repeat(5_000) }, meta: { values: { 'a\\.b': ['bigint'] }, v: 1 } },
    ];
    for (const message of cases) {
      const { ms, error } = timed(() => wireTransformer.deserialize(message as never));
      expect(isWorkqError(error), JSON.stringify(message).slice(0, 80)).toBe(true);
      expect(ms).toBeLessThan(100);
    }
  });

  it(`refuses a path in meta deeper than ${MAX_WIRE_DEPTH} segments`, () => {
    const message = { json: null, meta: { values: { [Array(100_000).fill('0').join('.')]: ['undefined'] }, v: 1 } };
    const { ms, error } = timed(() => wireTransformer.deserialize(message as never));
    expect(isWorkqError(error, 'VALIDATION')).toBe(true);
    expect(ms).toBeLessThan(100);
  });

  it('ignores referentialEqualities, so a few hundred bytes cannot stand for a graph of 2^30 nodes', () => {
    const json: Record<string, unknown> = { a0: [1] };
    const referentialEqualities: Record<string, string[]> = {};
    for (let i = 1; i <= 30; i++) {
      json[`a${i}`] = [null, null];
      referentialEqualities[`a${i - 1}`] = [`a${i}.0`, `a${i}.1`];
    }
    const read = wireTransformer.deserialize({ json, meta: { referentialEqualities, v: 1 } } as never);
    const { ms, error } = timed(() => JSON.stringify(read));
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(100);
    expect((read as Record<string, unknown>).a30).toEqual([null, null]);
  });
});

describe('wireTransformer, an object plain but for top-level dates (a claim)', () => {
  const claim = {
    name: 'imageConvert',
    limit: 100,
    startedAt: new Date(1_700_000_000_000),
    complete: [{ id: 'a', leaseToken: 't', result: { bytes: 3, tags: ['x'] } }],
  };

  it('is written as superjson writes it, without superjson', () => {
    const serialize = vi.spyOn(superjson, 'serialize');
    try {
      const written = wireTransformer.serialize(claim);
      expect(serialize).not.toHaveBeenCalled();
      expect(JSON.stringify(written)).toBe(JSON.stringify(superjson.serialize(claim)));
    } finally {
      serialize.mockRestore();
    }
  });

  it('is read as superjson reads it, without superjson, after the same bounds', () => {
    const deserialize = vi.spyOn(superjson, 'deserialize');
    try {
      expect(wireTransformer.deserialize(onTheWire(claim))).toEqual(claim);
      expect(deserialize).not.toHaveBeenCalled();
      const long = { json: { at: `2020-01-01${' '.repeat(100)}` }, meta: { values: { at: ['Date'] }, v: 1 } };
      const { error } = timed(() => wireTransformer.deserialize(long as never));
      expect(isWorkqError(error, 'PAYLOAD_TOO_LARGE')).toBe(true);
    } finally {
      deserialize.mockRestore();
    }
  });

  it('leaves nested dates, escaped keys and invalid dates to superjson', () => {
    const values = [
      { at: new Date(0), nested: { at: new Date(1) } },
      { 'dotted.key': new Date(0) },
      { at: new Date(Number.NaN), n: 1 },
    ];
    for (const value of values) {
      expect(JSON.stringify(wireTransformer.serialize(value))).toBe(JSON.stringify(superjson.serialize(value)));
      expect(wireTransformer.deserialize(onTheWire(value))).toEqual(superjson.deserialize(onTheWire(value)));
    }
  });
});
