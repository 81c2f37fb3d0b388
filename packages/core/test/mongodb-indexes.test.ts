import { type MongoWireDouble, type RecordedCommand, startMongoWireDouble } from '@workq/test-support';
import { MongoClient } from 'mongodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { createMongoStore, dropRetiredMongoIndexes, type MongoStoreOptions } from '../src/stores/mongodb/index.ts';
import { rejection } from './support/fixtures.ts';
import { ManualClock } from './support/manual-clock.ts';

// The MongoDB store's indexes under the real driver, against a fake primary
// that speaks the wire protocol: what it creates, changes and leaves, read
// back with listIndexes, and what its queries cost by the double's model
// (`costQueries`). Each test has a database of its own.

const wire = await startMongoWireDouble();
const client = new MongoClient(wire.url);
const opened: Store[] = [];
let databases = 0;
afterEach(async () => {
  wire.state.costQueries = false;
  await Promise.all(opened.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await client.close();
  await wire.close();
});

/** A store on `dbName` (a fresh database unless given) of `server`, with an engine on a manual clock. */
async function openOnWire(options: Partial<MongoStoreOptions> = {}, dbName = nextDb(), server: MongoWireDouble = wire) {
  const store = await createMongoStore({ url: server.url, dbName, notify: false, ...options });
  opened.push(store);
  const clock = new ManualClock();
  return { dbName, store, clock, engine: createEngine({ store, clock, leaseSweepIntervalMs: 0 }) };
}
const nextDb = () => `workq_indexes_${++databases}`;

/** The indexes of `collection` in `dbName`, by name. */
async function indexesOf(dbName: string, collection = 'workq_jobs') {
  const indexes = await client.db(dbName).collection(collection).listIndexes().toArray();
  return Object.fromEntries(indexes.map((index) => [index.name as string, index]));
}

/** The queries of the commands sent to `dbName` from the `from`th on, each with its command. */
const queriesSince = (dbName: string, from: number) =>
  wire.commands
    .slice(from)
    .filter((command) => command.db === dbName)
    .flatMap((command: RecordedCommand) => command.queries.map((query) => ({ ...query, command })));

describe('mongodb store: indexes', () => {
  it('creates the claim, idempotency, lease, TTL, listing and registry indexes as specified', async () => {
    const { dbName } = await openOnWire({ historyRetentionMs: 3 * 86_400_000 });
    const jobs = await indexesOf(dbName);
    expect(jobs.claim_by_version).toMatchObject({
      key: { name: 1, version: 1, priority: -1, orderKey: 1, _id: 1 },
      partialFilterExpression: { state: 'waiting' },
    });
    expect(Object.keys(jobs.claim_by_version?.key ?? {})).toEqual(['name', 'version', 'priority', 'orderKey', '_id']);
    expect(jobs.idempotency).toMatchObject({
      key: { name: 1, idempotencyKey: 1 },
      unique: true,
      partialFilterExpression: { idempotencyKey: { $type: 'string' } },
    });
    expect(jobs.lease_expiry).toMatchObject({
      key: { leaseExpiresAt: 1 },
      partialFilterExpression: { state: 'active' },
    });
    expect(jobs.history_ttl).toMatchObject({ key: { finishedAt: 1 }, expireAfterSeconds: 3 * 86_400 });
    expect(jobs.delayed_due).toMatchObject({
      key: { name: 1, runAt: 1 },
      partialFilterExpression: { state: 'delayed' },
    });
    expect(jobs.list_by_name?.key).toEqual({ name: 1, state: 1, _id: 1 });
    const schemas = Object.values(await indexesOf(dbName, 'workq_schemas'));
    expect(schemas).toContainEqual(expect.objectContaining({ key: { name: 1, version: 1 }, unique: true }));
  });

  it('keeps a job due later out of the claim index until a claim of its name finds it due', async () => {
    const { dbName, engine, clock } = await openOnWire();
    const later = await engine.enqueue({ name: 'later', version: 1, payload: {}, options: { delayMs: 1_000 } });
    const jobs = client.db(dbName).collection<{ _id: string; state: string }>('workq_jobs');
    const stored = async () => (await jobs.findOne({ _id: later.id }))?.state;
    const claim = () => engine.claim({ name: 'later', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(await stored()).toBe('delayed');
    expect(await claim()).toEqual([]);
    clock.advance(1_000);
    expect([await stored(), (await engine.get(later.id)).state]).toEqual(['delayed', 'ready']);
    expect((await claim()).map((job) => job.id)).toEqual([later.id]);
    expect(await stored()).toBe('active');
  });

  it('moves jobs an earlier version left waiting for later out of the claim index, on the open that creates it', async () => {
    const { dbName, engine } = await openOnWire();
    const inAnHour = new Date(Date.now() + 3_600_000);
    const later = await engine.enqueue({ name: 'old', version: 1, payload: {}, options: { runAt: inAnHour } });
    const due = await engine.enqueue({ name: 'old', version: 1, payload: {} });
    // As an earlier version left the store: the later job waiting, and no index for delayed jobs.
    const jobs = client.db(dbName).collection<{ _id: string; state: string }>('workq_jobs');
    const stored = async (id: string) => (await jobs.findOne({ _id: id }))?.state;
    const leaveWaiting = () => jobs.updateOne({ _id: later.id }, { $set: { state: 'waiting' } });
    await leaveWaiting();
    await jobs.dropIndex('delayed_due');

    await openOnWire({}, dbName);
    expect([await stored(later.id), await stored(due.id)]).toEqual(['delayed', 'waiting']);
    expect(Object.keys(await indexesOf(dbName))).toContain('delayed_due');
    // Once the index exists, an open leaves the jobs as they are.
    await leaveWaiting();
    await openOnWire({}, dbName);
    expect(await stored(later.id)).toBe('waiting');
  });

  it('defaults the TTL to 7 days, and a changed retention updates it in place', async () => {
    const { dbName } = await openOnWire();
    const ttl = async () => (await indexesOf(dbName)).history_ttl?.expireAfterSeconds;
    expect(await ttl()).toBe(7 * 86_400);
    await openOnWire({ historyRetentionMs: 60_000 }, dbName);
    expect(await ttl()).toBe(60);
  });

  it('uses the collection prefix', async () => {
    const { dbName } = await openOnWire({ collectionPrefix: 'q1_' });
    expect(Object.keys(await indexesOf(dbName, 'q1_jobs')).length).toBeGreaterThan(1);
    const collections = await client.db(dbName).listCollections({}, { nameOnly: true }).toArray();
    expect(collections.map((collection) => collection.name)).not.toContain('workq_jobs');
  });
});

describe('mongodb store: queries use their indexes', () => {
  it('a claim by an older consumer does not step over jobs of newer versions ahead of it', async () => {
    const { dbName, engine } = await openOnWire();
    const newer = Array.from({ length: 300 }, (_, n) => ({
      name: 'ver.a',
      version: 2,
      payload: { n },
      options: { priority: 10 },
    }));
    await engine.enqueueMany(newer);
    const older = await engine.enqueue({ name: 'ver.a', version: 1, payload: {} });
    wire.state.costQueries = true;
    const from = wire.commands.length;
    const [job] = await engine.claim({ name: 'ver.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(job?.id).toBe(older.id);
    const plans = queriesSince(dbName, from).map((query) => query.plan);
    expect(plans.length).toBeGreaterThan(0);
    const examined = plans.reduce((sum, plan) => sum + (plan?.examined ?? Number.POSITIVE_INFINITY), 0);
    expect(examined).toBeLessThan(10);
  });

  it('a claim reads its candidates along the claim index, in claim order, for a range of versions', async () => {
    const { dbName, engine } = await openOnWire();
    await engine.enqueueMany([1, 2, 3, 2, 1].map((version, n) => ({ name: 'ver.b', version, payload: { n } })));
    wire.state.costQueries = true;
    const from = wire.commands.length;
    const claimed = await engine.claim({ name: 'ver.b', minVersion: 1, maxVersion: 2, limit: 3, workerId: 'w' });
    expect(claimed.map((job) => job.payload)).toEqual([{ n: 0 }, { n: 1 }, { n: 3 }]);
    const candidates = queriesSince(dbName, from).find(
      (query) => query.filter.state === 'waiting' && query.command.body.sort !== undefined,
    );
    expect(candidates?.plan).toMatchObject({ index: 'claim_by_version', sortedByIndex: true });
  });

  it('a duplicate-key enqueue finds the key’s holder through the idempotency index, however many jobs are kept', async () => {
    const { dbName, engine } = await openOnWire();
    await engine.enqueueMany(Array.from({ length: 500 }, (_, n) => ({ name: 'idx.a', version: 1, payload: { n } })));
    const holder = await engine.enqueue({ name: 'idx.a', version: 1, payload: {}, options: { idempotencyKey: 'k' } });
    wire.state.costQueries = true;
    const from = wire.commands.length;
    const again = await engine.enqueue({ name: 'idx.a', version: 1, payload: {}, options: { idempotencyKey: 'k' } });
    expect(again).toMatchObject({ id: holder.id, created: false });
    const lookups = queriesSince(dbName, from).filter((query) => query.command.name === 'find');
    expect(lookups.map((query) => query.plan)).toEqual([{ index: 'idempotency', examined: 1, sortedByIndex: false }]);
  });
});

describe('mongodb store: index changes', () => {
  it('never drops an index in the way of a wanted one while others may use it: the start fails naming it (86, 85)', async () => {
    const { dbName } = await openOnWire();
    const jobs = client.db(dbName).collection('workq_jobs');
    // An idempotency index changed by hand under the store's name: dropping it would admit duplicates meanwhile.
    await jobs.dropIndex('idempotency');
    await jobs.createIndex({ idempotencyKey: 1 }, { name: 'idempotency', unique: true, sparse: true });
    const from = wire.commands.length;
    const changed = await rejection(openOnWire({}, dbName));
    expect(changed).toMatchObject({ code: 'UNAVAILABLE', retryable: false });
    expect(changed.message).toContain("db.workq_jobs.dropIndex('idempotency')");
    // The wanted listing index's definition under another name (85).
    await jobs.dropIndex('idempotency');
    await jobs.dropIndex('list_by_name');
    await jobs.createIndex({ name: 1, state: 1, _id: 1 }, { name: 'by_name_by_hand' });
    const twin = await rejection(openOnWire({}, dbName));
    expect(twin.message).toContain("dropIndex('by_name_by_hand')");
    expect(Object.keys(await indexesOf(dbName))).toContain('by_name_by_hand');
    const drops = wire.commands.slice(from).filter((command) => command.name === 'dropIndexes');
    expect(drops.map((command) => command.body.index)).toEqual(['idempotency', 'list_by_name']);
  });

  it('changes a TTL in place under the majority write concern, and takes a commit quorum on mongos', async () => {
    const mongos = await startMongoWireDouble({ topology: 'mongos' });
    try {
      const { dbName } = await openOnWire({}, nextDb(), mongos);
      const from = mongos.commands.length;
      await openOnWire({ historyRetentionMs: 60_000, indexBuildTimeoutMS: 5_000 }, dbName, mongos);
      const sent = mongos.commands.slice(from).filter((command) => command.db === dbName);
      const ttl = mongos.state.collection(dbName, 'workq_jobs')?.indexes.get('history_ttl');
      expect(ttl?.expireAfterSeconds).toBe(60);
      expect(sent.find((command) => command.name === 'collMod')?.body.writeConcern).toEqual({
        w: 'majority',
        j: true,
        wtimeout: 5_000,
      });
      const builds = sent.filter((command) => command.name === 'createIndexes');
      expect(builds.length).toBeGreaterThan(0);
      for (const build of builds) expect(build.body).toMatchObject({ commitQuorum: 'majority', maxTimeMS: 5_000 });
    } finally {
      await Promise.all(opened.splice(0).map((store) => store.close()));
      await mongos.close();
    }
  });

  it('opens a store whose claim index an earlier version made, and leaves that index to the servers still using it', async () => {
    const { dbName, engine } = await openOnWire();
    const jobs = client.db(dbName).collection('workq_jobs');
    await jobs.dropIndex('claim_by_version');
    const earlier = { name: 1, priority: -1, orderKey: 1, _id: 1 } as const;
    await jobs.createIndex(earlier, { name: 'claim', partialFilterExpression: { state: 'waiting' } });
    const { engine: upgraded } = await openOnWire({}, dbName);
    const { id } = await engine.enqueue({ name: 'up.a', version: 1, payload: {} });
    expect((await upgraded.claim({ name: 'up.a', maxVersion: 1, limit: 1, workerId: 'w' }))[0]?.id).toBe(id);
    const names = async () => Object.keys(await indexesOf(dbName));
    expect(await names()).toEqual(expect.arrayContaining(['claim', 'claim_by_version']));
    // Once every server runs this version, the admin step drops it; a second run finds nothing to drop.
    const db = client.db(dbName);
    expect(await dropRetiredMongoIndexes(db)).toEqual(['workq_jobs.claim']);
    expect(await names()).not.toContain('claim');
    expect(await names()).toContain('claim_by_version');
    expect(await dropRetiredMongoIndexes(db)).toEqual([]);
  });

  it('refuses a history retention beyond what a TTL index takes with VALIDATION, naming the option', async () => {
    const error = await rejection(openOnWire({ historyRetentionMs: 100 * 365 * 86_400_000 }));
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toContain('historyRetentionMs');
    expect((await rejection(openOnWire({ historyRetentionMs: 0 }))).code).toBe('VALIDATION');
  });
});
