import type { Doc, IndexSpec } from '@workq/test-support';
import { MongoNetworkError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { createMongoDriverDouble, type MongoDriverDoubleOptions } from './support/mongodb-double.ts';
import type { DoubleChangeStream } from './support/mongodb-double-change-stream.ts';

// The driver double is only worth what its strictness is: where the real
// server refuses, fails or lags, the double must too, or the store's tests
// on it prove less than they say.

const DB = 'double_test';

function collectionOn(options: MongoDriverDoubleOptions = {}) {
  const double = createMongoDriverDouble(options);
  const db = double.client.db(DB, { writeConcern: { w: 'majority', wtimeoutMS: 20 } });
  return { double, db, items: db.collection('items') };
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('driver double: indexes', () => {
  const claim: IndexSpec = { name: 'claim', key: { name: 1, at: 1 }, partialFilterExpression: { state: 'ready' } };

  it('refuses what the server refuses: 86 for another key or partial filter, 85 for other options or names', async () => {
    const { items } = collectionOn();
    await items.createIndexes([claim, { name: 'ttl', key: { doneAt: 1 }, expireAfterSeconds: 60 }]);
    const refused = async (spec: IndexSpec) =>
      ((await failure(items.createIndexes([spec]))) as { code?: number })?.code;
    expect(await refused({ ...claim, key: { name: 1, at: -1 } })).toBe(86);
    expect(await refused({ ...claim, partialFilterExpression: { state: 'waiting' } })).toBe(86);
    expect(await refused({ ...claim, unique: true })).toBe(85);
    expect(await refused({ ...claim, name: 'claim_again' })).toBe(85);
    expect(await refused({ name: 'ttl', key: { doneAt: 1 }, expireAfterSeconds: 120 })).toBe(85);
    expect(await refused({ name: 'ttl_far', key: { far: 1 }, expireAfterSeconds: 2 ** 31 })).toBe(67);
    expect(await items.createIndexes([claim])).toEqual(['claim']);
  });

  it('refuses a hint naming a partial index the query does not imply, and one naming no index', async () => {
    const { items } = collectionOn();
    await items.createIndexes([
      claim,
      { name: 'keys', key: { key: 1 }, partialFilterExpression: { key: { $type: 'string' } } },
    ]);
    const find = (filter: Doc, hint: string) => items.find(filter, { hint }).toArray();
    expect(await find({ state: 'ready', name: 'a' }, 'claim')).toEqual([]);
    expect(await failure(find({ name: 'a' }, 'claim'))).toMatchObject({ code: 2 });
    expect(await find({ key: { $in: ['k'], $type: 'string' } }, 'keys')).toEqual([]);
    expect(await failure(find({ key: 'k' }, 'keys'))).toMatchObject({ code: 2 });
    expect(await failure(find({}, 'nothing'))).toMatchObject({ code: 2 });
  });

  it('plans a query as the server would: bounds from leading equalities, a limited scan when the index sorts', async () => {
    const { double, items } = collectionOn();
    await items.createIndexes([claim]);
    await items.insertMany(Array.from({ length: 50 }, (_, at) => ({ state: 'ready', name: at < 40 ? 'a' : 'b', at })));
    await items.find({ state: 'ready', name: 'b' }, { hint: 'claim', sort: { at: 1 }, limit: 3 }).toArray();
    await items.find({ state: 'ready', name: 'b' }, { hint: 'claim', sort: { other: 1 }, limit: 3 }).toArray();
    await items.find({ name: 'a' }).toArray();
    expect(double.queries.map((query) => query.plan)).toEqual([
      { index: 'claim', examined: 3, sortedByIndex: true },
      { index: 'claim', examined: 10, sortedByIndex: false },
      { index: 'COLLSCAN', examined: 50, sortedByIndex: false },
    ]);
  });
});

describe('driver double: writes cut off', () => {
  it('a multi-document update cut off halfway stays half applied and fails: the driver never retries it', async () => {
    const { double, items } = collectionOn({ replicaSet: 'rs0' });
    await items.insertMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
    double.failWrite({ collection: 'items', appliedDocs: 1 });
    expect(await failure(items.updateMany({}, { $set: { done: true } }))).toBeInstanceOf(MongoNetworkError);
    expect((await items.find({ done: true }).toArray()).length).toBe(1);
  });

  it('a single-document write cut off after it was applied is retried on a replica set, not on a standalone', async () => {
    const onReplicaSet = collectionOn({ replicaSet: 'rs0' });
    await onReplicaSet.items.insertOne({ _id: 'a', n: 1 });
    onReplicaSet.double.failWrite({ collection: 'items' });
    expect(await onReplicaSet.items.updateOne({ _id: 'a' }, { $inc: { n: 1 } })).toMatchObject({ modifiedCount: 1 });
    onReplicaSet.double.failWrite({ collection: 'items', times: 2 });
    expect(await failure(onReplicaSet.items.updateOne({ _id: 'a' }, { $inc: { n: 1 } }))).toBeInstanceOf(
      MongoNetworkError,
    );
    expect(await onReplicaSet.items.findOne({ _id: 'a' })).toMatchObject({ n: 3 });

    const standalone = collectionOn();
    await standalone.items.insertOne({ _id: 'a', n: 1 });
    standalone.double.failWrite({ collection: 'items' });
    expect(await failure(standalone.items.updateOne({ _id: 'a' }, { $inc: { n: 1 } }))).toBeInstanceOf(
      MongoNetworkError,
    );
  });

  it('a bulk write of single-document updates is retried as a whole; one with a multi-document update is not', async () => {
    const { double, items } = collectionOn({ replicaSet: 'rs0' });
    await items.insertMany([{ _id: 'a' }, { _id: 'b' }]);
    double.failWrite({ collection: 'items' });
    const single = [{ updateOne: { filter: { _id: 'a' }, update: { $set: { x: 1 } } } }];
    expect(await items.bulkWrite(single)).toMatchObject({ modifiedCount: 1 });
    double.failWrite({ collection: 'items' });
    const multi = [{ updateMany: { filter: {}, update: { $set: { y: 1 } } } }];
    expect(await failure(items.bulkWrite(multi))).toMatchObject({ errorResponse: expect.any(MongoNetworkError) });
  });
});

describe('driver double: replication', () => {
  it('a read sent to a lagging secondary misses the writes it has not applied yet', async () => {
    const { double, items } = collectionOn({ replicaSet: 'rs0', laggingSecondary: true });
    await items.insertOne({ _id: 'a' });
    expect(await items.find({}, { readPreference: 'secondaryPreferred' }).toArray()).toEqual([]);
    expect(await items.find({}).toArray()).toEqual([{ _id: 'a' }]);
    double.replicate();
    expect(await items.find({}, { readPreference: 'secondaryPreferred' }).toArray()).toEqual([{ _id: 'a' }]);
  });

  it('without a majority, a write fails after its wtimeoutMS, one without waits on, and an index build times out', async () => {
    const { double, db, items } = collectionOn({ replicaSet: 'rs0' });
    double.majorityAvailable = false;
    expect(await failure(items.insertOne({ _id: 'a' }))).toMatchObject({ code: 64 });
    expect(await items.findOne({ _id: 'a' })).toEqual({ _id: 'a' }); // applied on the primary all the same
    const unbounded = db.collection('items', { writeConcern: { w: 'majority' } }).insertOne({ _id: 'b' });
    const waited = await Promise.race([
      unbounded.then(() => 'answered'),
      new Promise((r) => setTimeout(r, 50, 'waiting')),
    ]);
    expect(waited).toBe('waiting');
    const build = items.createIndexes([{ name: 'n', key: { n: 1 } }], { maxTimeMS: 20 });
    expect(await failure(build)).toMatchObject({ code: 50 });
  });
});

describe('driver double: change streams', () => {
  async function watching() {
    const { double, items } = collectionOn({ replicaSet: 'rs0' });
    const stream = items.watch([
      { $match: { operationType: { $in: ['insert', 'invalidate'] } } },
    ]) as DoubleChangeStream;
    const events: string[] = [];
    stream.on('change', (change: Doc) => events.push(String(change.operationType)));
    stream.on('error', (error: Error) => events.push(`error ${(error as { code?: number }).code}`));
    stream.on('close', () => events.push('close'));
    await new Promise((resolve) => setTimeout(resolve, 0));
    return { double, items, stream, events };
  }

  it('ends for good on a non-resumable error: close (from its cursor), then error', async () => {
    const { double, items, stream, events } = await watching();
    await items.insertOne({ _id: 'a' });
    stream.fail();
    await new Promise((resolve) => setTimeout(resolve, 0));
    await items.insertOne({ _id: 'b' });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(events).toEqual(['insert', 'close', 'error 286']);
    expect(double.changeStreams.size).toBe(0);
  });

  it('ends after an invalidate, which a pipeline that lets it through also delivers', async () => {
    const { stream, events } = await watching();
    stream.invalidate();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(events).toEqual(['invalidate', 'close']);
  });
});

describe('driver double: TTL monitor', () => {
  it('deletes documents older than their TTL index allows', async () => {
    const { double, items } = collectionOn();
    await items.createIndexes([{ name: 'ttl', key: { doneAt: 1 }, expireAfterSeconds: 60 }]);
    const now = new Date('2026-06-01T00:00:00Z');
    await items.insertMany([
      { _id: 'old', doneAt: new Date(now.getTime() - 61_000) },
      { _id: 'new', doneAt: new Date(now.getTime() - 59_000) },
      { _id: 'open', doneAt: null },
    ]);
    expect(double.expireTtl(now)).toBe(1);
    expect((await items.find({}).toArray()).map((doc) => doc._id)).toEqual(['new', 'open']);
  });
});
