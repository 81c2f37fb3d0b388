import { describe, expect, it } from 'vitest';
import { refusalOf, wireDoubleSuite } from './suite-double.ts';

/** The partial filters the server takes, and those it refuses with its codes, creating nothing. */
describe('MongoDB wire double: partial index filters', () => {
  const wire = wireDoubleSuite();

  it('refuses a filter that negates or uses an operator partial indexes do not take', async () => {
    const items = wire.client.db('wire').collection('partial_refused');
    const create = (partialFilterExpression: object) =>
      refusalOf(items.createIndex({ a: 1 }, { partialFilterExpression }));
    const unsupported = { code: 67, message: expect.stringContaining('Expression not supported in partial index') };
    for (const filter of [
      { a: { $exists: false } },
      { a: { $ne: 1 } },
      { a: { $nin: [1] } },
      { a: { $not: { $gt: 1 } } },
      { $nor: [{ a: 1 }] },
      { a: { $size: 2 } },
      { $or: [{ a: { $ne: 1 } }] },
    ]) {
      expect(await create(filter), JSON.stringify(filter)).toMatchObject(unsupported);
    }
    expect(await create({ $expr: { $eq: ['$a', 1] } })).toMatchObject({ code: 224 });
    expect(
      (
        await items
          .listIndexes()
          .toArray()
          .catch(() => [])
      ).map((index) => index.name),
    ).not.toContain('a_1');
  });

  it('takes equality, comparisons, $type, $in, $exists: true, and $and and $or of them', async () => {
    const items = wire.client.db('wire').collection('partial_taken');
    const filters = [
      { a: { $exists: true } },
      { a: { $in: [1, 2] } },
      { a: { $type: 'string' }, b: true },
      { $or: [{ a: 1 }, { b: { $gt: 2 } }] },
      { $and: [{ a: { $gte: 1, $lt: 5 } }, { b: null }] },
    ];
    for (const [i, partialFilterExpression] of filters.entries()) {
      await items.createIndex({ [`f${i}`]: 1 }, { partialFilterExpression });
    }
    expect((await items.listIndexes().toArray()).length).toBe(filters.length + 1);
  });
});
