import { Query } from 'mingo';
import { ObjectId } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { scalarFilter } from './scalar-filter.ts';

const DAY = new Date('2026-01-02T00:00:00Z');
const HELD: unknown[] = [
  undefined,
  null,
  0,
  1,
  1.5,
  -1,
  Number.NaN,
  '',
  'a',
  'b',
  '1',
  true,
  false,
  new Date('2026-01-01T00:00:00Z'),
  DAY,
  new Date('2026-01-03T00:00:00Z'),
  new Date(Number.NaN),
  [1, 'a'],
  [],
  { a: 1 },
  new ObjectId(),
];
const CONDITIONS: unknown[] = [
  1,
  'a',
  true,
  { $eq: 1 },
  { $eq: 'a' },
  { $in: [1, 'a', false] },
  { $in: [] },
  { $lte: DAY },
  { $lt: DAY },
  { $gt: DAY },
  { $gte: DAY },
  { $lte: 1 },
  { $gt: 0, $lt: 2 },
  { $gte: 'a' },
  { $lt: 'b', $in: ['a', 'b'] },
];

/** The quick verdict where it gives one is the full query's: every condition against every kind of value. */
describe('MongoDB wire double: scalar filters', () => {
  it('answers as the full query does wherever it answers, and judges the plain values of a claim', () => {
    let judged = 0;
    for (const condition of CONDITIONS) {
      const filter = { f: condition };
      const quick = scalarFilter(filter);
      expect(quick, JSON.stringify(filter)).toBeDefined();
      const query = new Query(filter, {});
      for (const held of HELD) {
        const doc = held === undefined ? {} : { f: held };
        const verdict = quick?.(doc);
        if (verdict === undefined) continue;
        judged += 1;
        expect(verdict, `${JSON.stringify(filter)} on ${String(held)}`).toBe(query.test(doc));
      }
    }
    expect(judged).toBeGreaterThan(CONDITIONS.length * 5);
    const claim = scalarFilter({ state: 'waiting', name: 'n', version: { $in: [1, 2] }, runAt: { $lte: DAY } });
    expect(claim?.({ state: 'waiting', name: 'n', version: 2, runAt: DAY })).toBe(true);
    expect(claim?.({ state: 'waiting', name: 'n', version: 3, runAt: DAY })).toBe(false);
  });

  it('leaves to the full query any other condition, a dotted or operator field, and values it does not judge', () => {
    for (const filter of [
      { f: { $exists: true } },
      { f: { $ne: 1 } },
      { f: { $in: [null] } },
      { f: { $type: 'string' } },
      { 'f.g': 1 },
      { $or: [{ f: 1 }] },
      { f: null },
      { f: DAY },
      { f: { a: 1 } },
      { f: {} },
    ]) {
      expect(scalarFilter(filter), JSON.stringify(filter)).toBeUndefined();
    }
    const quick = scalarFilter({ f: { $lte: 1 } });
    for (const held of [undefined, null, [0], { a: 0 }, 'a', DAY, Number.NaN]) {
      expect(quick?.(held === undefined ? {} : { f: held }), String(held)).toBeUndefined();
    }
  });
});
