import { type MongoWireDouble, type RecordedCommand, startMongoWireDouble } from '@workq/test-support';
import { MongoClient } from 'mongodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { createMongoStore, dropRetiredMongoIndexes, type MongoStoreOptions } from '../src/stores/mongodb/index.ts';
import { claimOne } from './conformance/context.ts';
import { rejection } from './support/fixtures.ts';
import { ManualClock } from './support/manual-clock.ts';

// The MongoDB store's indexes under the real driver, against a fake primary
// that speaks the wire protocol: what it creates, changes and leaves, read
// back with listIndexes, what its queries cost by the double's model
// (`costQueries`), and what the TTL monitor's passes (`runTtlMonitor`, run by
// the tests themselves) leave of a job's own retention. Each test has a
// database of its own.

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

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

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
    expect(jobs.shared_history_ttl).toMatchObject({
      key: { finishedAt: 1 },
      expireAfterSeconds: 3 * 86_400,
      partialFilterExpression: { ttl: true, finishedAt: { $type: 'date' } },
    });
    expect(jobs.own_retention_completed).toMatchObject({
      key: { retainCompletedMs: 1, finishedAt: 1 },
      partialFilterExpression: { state: 'completed', retainCompletedMs: { $exists: true } },
    });
    expect(jobs.own_retention_dead).toMatchObject({
      key: { retainDeadMs: 1, finishedAt: 1 },
      partialFilterExpression: { state: 'dead', retainDeadMs: { $exists: true } },
    });
    expect(jobs.own_retention_cancelled).toMatchObject({
      key: { finishedAt: 1 },
      partialFilterExpression: { state: 'cancelled', retainCompletedMs: { $exists: true } },
    });
    expect(jobs.own_retention_completed?.expireAfterSeconds).toBeUndefined();
    expect(jobs.own_retention).toBeUndefined();
    expect(jobs.history_ttl).toBeUndefined();
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
    const ttl = async () => (await indexesOf(dbName)).shared_history_ttl?.expireAfterSeconds;
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
  it('a prune by the server-wide retention reads no kept job, through the TTL and own-retention indexes', async () => {
    const { dbName, engine, clock } = await openOnWire();
    // Completed jobs: without a retention of their own, with one that does not name completion, and with one
    // longer than the server-wide retention (kept); and a cancelled job with one, which follows the server-wide.
    const batch = (options: object) => Array(100).fill({ name: 'prune.a', version: 1, payload: {}, options });
    await engine.enqueueMany([
      ...batch({}),
      ...batch({ retention: { deadMs: HOUR_MS } }),
      ...batch({ retention: { completedMs: 30 * DAY_MS } }),
    ]);
    const claimed = await engine.claim({ name: 'prune.a', maxVersion: 1, limit: 300, workerId: 'w' });
    for (const job of claimed) await engine.complete(job);
    const retention = { completedMs: HOUR_MS, deadMs: HOUR_MS };
    const cancelled = await engine.enqueue({ name: 'prune.b', version: 1, payload: {}, options: { retention } });
    await engine.cancel(cancelled.id);
    clock.advance(7 * DAY_MS + 1);
    wire.state.costQueries = true;
    const from = wire.commands.length;
    expect(await engine.prune()).toBe(201);
    const shared = queriesSince(dbName, from).filter(
      (query) => query.command.name === 'find' && (query.filter.finishedAt as { $lt?: Date } | undefined)?.$lt,
    );
    expect(shared.map((query) => query.plan)).toEqual([
      { index: 'shared_history_ttl', examined: 100, sortedByIndex: false },
      { index: 'own_retention_completed', examined: 100, sortedByIndex: false },
      { index: 'own_retention_dead', examined: 0, sortedByIndex: false },
      { index: 'own_retention_cancelled', examined: 1, sortedByIndex: false },
    ]);
  });
  it('a prune by jobs’ own retentions reads only the jobs due, plus a key per distinct retention', async () => {
    const { dbName, engine, clock } = await openOnWire();
    // 200 jobs kept for an hour (150 completed, 50 dead), 6 for a minute (4 completed, 2 dead), and one that
    // went dead, was retried and completed a minute later: its retention counts from its completion.
    const batch = (count: number, retention: object) =>
      Array(count).fill({ name: 'prune.own', version: 1, payload: {}, options: { retention } });
    await engine.enqueueMany([
      ...batch(4, { completedMs: MINUTE_MS }),
      ...batch(2, { deadMs: MINUTE_MS }),
      ...batch(200, { completedMs: HOUR_MS, deadMs: HOUR_MS }),
    ]);
    const [retried] = await engine.enqueueMany(batch(1, { completedMs: MINUTE_MS, deadMs: HOUR_MS }));
    const claimed = await engine.claim({ name: 'prune.own', maxVersion: 1, limit: 207, workerId: 'w' });
    for (const [n, job] of claimed.entries()) {
      const dead = (n >= 4 && n < 6) || (n >= 156 && n < 206) || job.id === retried?.id;
      if (dead) await engine.fail(job, { message: 'bad input', permanent: true });
      else await engine.complete(job);
    }
    expect(await engine.retryDead({ ids: [retried!.id] })).toBe(1);
    clock.advance(MINUTE_MS);
    await engine.complete(await claimOne(engine, 'prune.own'));

    wire.state.costQueries = true;
    const from = wire.commands.length;
    expect(await engine.prune()).toBe(6);
    const own = queriesSince(dbName, from).filter(
      (query) => query.command.name === 'find' && !(query.filter.finishedAt as { $lt?: Date } | undefined)?.$lt,
    );
    // 6 due, and one key per look-up of the next distinct retention (two each end, and one past the last).
    expect(own.reduce((sum, query) => sum + (query.plan?.examined ?? Number.POSITIVE_INFINITY), 0)).toBe(6 + 4);
    expect(new Set(own.map((query) => query.plan?.index))).toEqual(
      new Set(['own_retention_completed', 'own_retention_dead']),
    );
    expect(await engine.get(retried!.id)).toMatchObject({ state: 'completed' });
    clock.advance(MINUTE_MS - 1);
    expect(await engine.prune()).toBe(0);
    clock.advance(1);
    expect(await engine.prune()).toBe(1);
    await expect(engine.get(retried!.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
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
      const ttl = mongos.state.collection(dbName, 'workq_jobs')?.indexes.get('shared_history_ttl');
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
    const ownRetention = { partialFilterExpression: { retainCompletedMs: { $exists: true } } };
    await jobs.createIndex({ finishedAt: 1 }, { name: 'own_retention', ...ownRetention });
    const { engine: upgraded } = await openOnWire({}, dbName);
    const { id } = await engine.enqueue({ name: 'up.a', version: 1, payload: {} });
    expect((await upgraded.claim({ name: 'up.a', maxVersion: 1, limit: 1, workerId: 'w' }))[0]?.id).toBe(id);
    const names = async () => Object.keys(await indexesOf(dbName));
    expect(await names()).toEqual(expect.arrayContaining(['claim', 'claim_by_version']));
    // Once every server runs this version, the admin step drops it; a second run finds nothing to drop.
    const db = client.db(dbName);
    expect(await dropRetiredMongoIndexes(db)).toEqual(['workq_jobs.claim', 'workq_jobs.own_retention']);
    expect(await names()).not.toContain('claim');
    expect(await names()).not.toContain('own_retention');
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

/**
 * A store and engine keeping history for a minute on `dbName` (a fresh database unless given), with its jobs
 * collection and a TTL monitor pass at the manual clock's time, which dates the jobs' ends (a pass reaches
 * every database of the double, so a test reads only its own).
 */
async function openRetaining(dbName = nextDb()) {
  const { store, clock } = await openOnWire({ historyRetentionMs: MINUTE_MS }, dbName);
  const engine = createEngine({ store, clock, leaseSweepIntervalMs: 0, historyRetentionMs: MINUTE_MS });
  const jobs = client.db(dbName).collection<{ _id: string; ttl?: boolean | null }>('workq_jobs');
  /** The ids of the jobs the database holds, sorted. */
  const kept = async () => (await jobs.find({}, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id).sort();
  const ttlPass = () => wire.runTtlMonitor(clock.now());
  return { dbName, clock, engine, jobs, kept, ttlPass };
}

describe('mongodb store: retention against the TTL monitor', () => {
  it('keeps a job with a longer retention of its own past the TTL monitor; the pruner deletes it once it passed', async () => {
    const { engine, clock, kept, ttlPass } = await openRetaining();
    const name = 'keep.long';
    const [plain, long, onlyDead, deadLong] = (
      await engine.enqueueMany(
        [undefined, { completedMs: HOUR_MS }, { deadMs: HOUR_MS }, { deadMs: HOUR_MS }].map((retention, n) => ({
          name,
          version: 1,
          payload: { n },
          options: { priority: 10 - n, ...(retention ? { retention } : {}) },
        })),
      )
    ).map((job) => job.id);
    for (let i = 0; i < 3; i++) await engine.complete(await claimOne(engine, name));
    await engine.fail(await claimOne(engine, name), { message: 'bad input', permanent: true });

    clock.advance(MINUTE_MS + 1_000);
    ttlPass();
    // The TTL index expired the job without a retention of its own, and only it.
    expect(await kept()).toEqual([long, onlyDead, deadLong].sort());
    expect(await engine.get(long!)).toMatchObject({ state: 'completed' });
    // A completion its retention does not name follows the server-wide retention: the pruner deletes it.
    expect(await engine.prune()).toBe(1);
    expect(await kept()).toEqual([long, deadLong].sort());

    clock.advance(HOUR_MS - MINUTE_MS - 2_000);
    ttlPass();
    expect(await engine.prune()).toBe(0);
    expect(await kept()).toEqual([long, deadLong].sort());
    clock.advance(1_000);
    expect(await engine.prune()).toBe(2);
    expect(await kept()).toEqual([]);
    expect(plain).not.toBe(long);
  });

  it('marks every job it writes without a retention of its own, and only those: inserts, replays, moves, flows, debounces', async () => {
    const { engine, jobs, clock, kept, ttlPass } = await openRetaining();
    const name = 'mark';
    const retention = { completedMs: HOUR_MS };
    const marker = async (id: string) => (await jobs.findOne({ _id: id }))?.ttl;
    const [plain, own] = await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options: { priority: 9 } },
      { name, version: 1, payload: { n: 2 }, options: { priority: 8, retention } },
    ]);
    expect([await marker(plain!.id), await marker(own!.id)]).toEqual([true, undefined]);

    // A move's new job is marked by its own retention.
    const moved = await engine.moveTo(await claimOne(engine, name), { name: 'mark.moved', version: 1, payload: {} });
    const movedOwn = await engine.moveTo(await claimOne(engine, name), {
      name: 'mark.moved',
      version: 1,
      payload: {},
      options: { retention },
    });
    expect([await marker(moved.id), await marker(movedOwn.id)]).toEqual([true, undefined]);

    // A replay keeps the retention, and so the marker or its absence.
    for (let i = 0; i < 2; i++) await engine.complete(await claimOne(engine, 'mark.moved'));
    const replayed = await engine.replay(moved.id);
    const replayedOwn = await engine.replay(movedOwn.id);
    expect([await marker(replayed.id), await marker(replayedOwn.id)]).toEqual([true, undefined]);

    const flow = await engine.flows.enqueue({
      name: 'mark.parent',
      version: 1,
      payload: {},
      children: [{ name: 'mark.child', version: 1, payload: {} }],
    });
    expect(await marker(flow.id)).toBe(true);
    expect((await jobs.find({ parentId: flow.id }).toArray()).map((doc) => doc.ttl)).toEqual([true]);

    // A debounce that replaces the waiting holder takes the new job's retention, and the marker with it.
    const debounced = (options: object) =>
      engine.enqueue({
        name: 'mark.debounce',
        version: 1,
        payload: {},
        options: { debounce: { key: 'k', delayMs: 1_000 }, ...options },
      });
    const holder = await debounced({ retention });
    expect(await marker(holder.id)).toBeUndefined();
    expect((await debounced({})).id).toBe(holder.id);
    expect(await marker(holder.id)).toBe(true);
    expect((await debounced({ retention })).id).toBe(holder.id);
    expect(await marker(holder.id)).toBeNull();
    await debounced({ debounce: { key: 'k', delayMs: 1_000, mode: 'keepFirst' } });
    expect(await marker(holder.id)).toBeNull();
    // Kept past the TTL once it ran: its own retention holds.
    clock.advance(1_000);
    await engine.complete(await claimOne(engine, 'mark.debounce'));
    clock.advance(2 * MINUTE_MS);
    ttlPass();
    expect(await kept()).toContain(holder.id);
    expect(await engine.get(holder.id)).toMatchObject({ state: 'completed', retention });
  });

  it('an index an earlier version made caps every retention until dropRetiredMongoIndexes drops it', async () => {
    const first = await openRetaining();
    const name = 'upgrade';
    // As an earlier version left the store: its TTL index expiring every finished job.
    await first.jobs.createIndex({ finishedAt: 1 }, { name: 'history_ttl', expireAfterSeconds: 60 });
    const { engine, clock, kept, ttlPass, jobs } = await openRetaining(first.dbName);
    const finish = async (options: object) => {
      const { id } = await engine.enqueue({ name, version: 1, payload: {}, options });
      await engine.complete(await claimOne(engine, name));
      return id;
    };
    const retention = { completedMs: HOUR_MS };
    const capped = await finish({ retention });
    clock.advance(2 * MINUTE_MS);
    ttlPass();
    expect(await kept()).not.toContain(capped);

    // Jobs an earlier version wrote carry no marker: the admin step marks those without a retention of their
    // own before it drops the old index, so the TTL index and the pruner take them over.
    const earlier = [await finish({}), await finish({ retention })];
    await jobs.updateMany({ _id: { $in: earlier } }, { $unset: { ttl: '' } });
    const waiting = (await engine.enqueue({ name, version: 1, payload: {} })).id;
    await jobs.updateOne({ _id: waiting }, { $unset: { ttl: '' } });
    expect(await dropRetiredMongoIndexes(client.db(first.dbName))).toEqual(['workq_jobs.history_ttl']);
    const marks = async (ids: string[]) => Promise.all(ids.map(async (id) => (await jobs.findOne({ _id: id }))?.ttl));
    expect(await marks([...earlier, waiting])).toEqual([true, undefined, true]);
    expect(await dropRetiredMongoIndexes(client.db(first.dbName))).toEqual([]);

    const long = await finish({ retention });
    clock.advance(2 * MINUTE_MS);
    ttlPass();
    expect(await kept()).toEqual([earlier[1], long].sort());
    expect(await engine.prune()).toBe(0);
  });
});
