import { describe, expect, it } from 'vitest';
import { refusalOf as refusal, wireDoubleSuite } from './suite-double.ts';

/** What the fake primary does not model it refuses, with NotImplemented (238), rather than run it without. */
describe('MongoDB wire double: options it does not model', () => {
  const wire = wireDoubleSuite();

  it('refuses collation and arrayFilters wherever a command carries them, and changes nothing', async () => {
    const items = wire.client.db('wire').collection<{ _id: number; tags: { n: number }[]; name: string }>('items');
    await items.insertOne({ _id: 1, tags: [{ n: 1 }, { n: 2 }], name: 'A' });
    const collation = { locale: 'en', strength: 2 };
    const refused = { code: 238, codeName: 'NotImplemented', message: expect.stringContaining("'collation'") };
    expect(await refusal(items.find({ name: 'a' }, { collation }).toArray())).toEqual(refused);
    expect(await refusal(items.aggregate([{ $match: { name: 'a' } }], { collation }).toArray())).toEqual(refused);
    expect(await refusal(items.deleteMany({ name: 'a' }, { collation }))).toEqual(refused);
    expect(await refusal(items.createIndex({ name: 1 }, { collation }))).toEqual(refused);
    const filtered = { code: 238, codeName: 'NotImplemented', message: expect.stringContaining("'arrayFilters'") };
    const update = { $set: { 'tags.$[t].n': 0 } };
    const arrayFilters = [{ 't.n': 2 }];
    expect(await refusal(items.updateOne({ _id: 1 }, update, { arrayFilters }))).toEqual(filtered);
    expect(await refusal(items.findOneAndUpdate({ _id: 1 }, update, { arrayFilters }))).toEqual(filtered);
    expect(await items.findOne({ _id: 1 })).toEqual({ _id: 1, tags: [{ n: 1 }, { n: 2 }], name: 'A' });
  });
});
