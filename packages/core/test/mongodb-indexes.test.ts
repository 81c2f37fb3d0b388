import type { Db } from 'mongodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dropRetiredMongoIndexes } from '../src/stores/mongodb/index.ts';
import { rejection } from './support/fixtures.ts';
import { createMongoDriverDouble, DoubleDb } from './support/mongodb-double.ts';
import { DB, storesOnDouble } from './support/mongodb-on-double.ts';

const openOnDouble = storesOnDouble();

afterEach(() => {
  vi.restoreAllMocks();
});

/** The jobs collection of a store on `double`. */
const jobsOf = (double: ReturnType<typeof createMongoDriverDouble>) => double.collection(DB, 'workq_jobs')!;

describe('mongodb store: indexes', () => {
  it('creates the claim, idempotency, lease, TTL, listing and registry indexes as specified', async () => {
    const { double } = await openOnDouble({ historyRetentionMs: 3 * 86_400_000 });
    const jobs = Object.fromEntries(double.indexes(DB, 'workq_jobs').map((index) => [index.name, index]));
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
    const schemas = double.indexes(DB, 'workq_schemas');
    expect(schemas).toContainEqual(expect.objectContaining({ key: { name: 1, version: 1 }, unique: true }));
  });

  it('keeps a job due later out of the claim index until a claim of its name finds it due', async () => {
    const { double, engine, clock } = await openOnDouble();
    const later = await engine.enqueue({ name: 'later', version: 1, payload: {}, options: { delayMs: 1_000 } });
    const stored = () => double.collection(DB, 'workq_jobs')?.match({ _id: later.id })[0]?.state;
    const claim = () => engine.claim({ name: 'later', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(stored()).toBe('delayed');
    expect(await claim()).toEqual([]);
    clock.advance(1_000);
    expect([stored(), (await engine.get(later.id)).state]).toEqual(['delayed', 'ready']);
    expect((await claim()).map((job) => job.id)).toEqual([later.id]);
    expect(stored()).toBe('active');
  });

  it('moves jobs an earlier version left waiting for later out of the claim index, on the open that creates it', async () => {
    const { double, engine } = await openOnDouble();
    const inAnHour = new Date(Date.now() + 3_600_000);
    const later = await engine.enqueue({ name: 'old', version: 1, payload: {}, options: { runAt: inAnHour } });
    const due = await engine.enqueue({ name: 'old', version: 1, payload: {} });
    // As an earlier version left the store: the later job waiting, and no index for delayed jobs.
    const data = double.collection(DB, 'workq_jobs');
    const stored = (id: string) => data?.match({ _id: id })[0] ?? {};
    const leaveWaiting = () => data?.replace(stored(later.id), { ...stored(later.id), state: 'waiting' });
    leaveWaiting();
    data?.dropIndex('delayed_due');

    await openOnDouble({}, {}, double);
    expect([stored(later.id).state, stored(due.id).state]).toEqual(['delayed', 'waiting']);
    expect(double.indexes(DB, 'workq_jobs').map((index) => index.name)).toContain('delayed_due');
    // Once the index exists, an open leaves the jobs as they are.
    leaveWaiting();
    await openOnDouble({}, {}, double);
    expect(stored(later.id).state).toBe('waiting');
  });

  it('defaults the TTL to 7 days, and a changed retention updates it in place', async () => {
    const double = createMongoDriverDouble();
    await openOnDouble({}, {}, double);
    const ttl = () => double.indexes(DB, 'workq_jobs').find((index) => index.name === 'history_ttl');
    expect(ttl()?.expireAfterSeconds).toBe(7 * 86_400);
    await openOnDouble({ historyRetentionMs: 60_000 }, {}, double);
    expect(ttl()?.expireAfterSeconds).toBe(60);
  });

  it('uses the collection prefix', async () => {
    const { double } = await openOnDouble({ collectionPrefix: 'q1_' });
    expect(double.indexes(DB, 'q1_jobs').length).toBeGreaterThan(0);
    expect(double.indexes(DB, 'workq_jobs')).toEqual([]);
  });
});

describe('mongodb store: queries use their indexes', () => {
  it('a claim by an older consumer does not step over jobs of newer versions ahead of it', async () => {
    const { double, engine } = await openOnDouble();
    const newer = Array.from({ length: 300 }, (_, n) => ({
      name: 'ver.a',
      version: 2,
      payload: { n },
      options: { priority: 10 },
    }));
    await engine.enqueueMany(newer);
    const older = await engine.enqueue({ name: 'ver.a', version: 1, payload: {} });
    double.queries.length = 0;
    const [job] = await engine.claim({ name: 'ver.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(job?.id).toBe(older.id);
    const examined = double.queries.reduce((sum, query) => sum + query.plan.examined, 0);
    expect(examined).toBeLessThan(10);
  });

  it('a claim reads its candidates along the claim index, in claim order, for a range of versions', async () => {
    const { double, engine } = await openOnDouble();
    await engine.enqueueMany([1, 2, 3, 2, 1].map((version, n) => ({ name: 'ver.b', version, payload: { n } })));
    double.queries.length = 0;
    const claimed = await engine.claim({ name: 'ver.b', minVersion: 1, maxVersion: 2, limit: 3, workerId: 'w' });
    expect(claimed.map((job) => job.payload)).toEqual([{ n: 0 }, { n: 1 }, { n: 3 }]);
    const candidates = double.queries.find((query) => query.filter.state === 'waiting' && query.sort);
    expect(candidates?.plan).toMatchObject({ index: 'claim_by_version', sortedByIndex: true });
  });

  it('a duplicate-key enqueue finds the key’s holder through the idempotency index, however many jobs are kept', async () => {
    const { double, engine } = await openOnDouble();
    await engine.enqueueMany(Array.from({ length: 500 }, (_, n) => ({ name: 'idx.a', version: 1, payload: { n } })));
    const holder = await engine.enqueue({ name: 'idx.a', version: 1, payload: {}, options: { idempotencyKey: 'k' } });
    double.queries.length = 0;
    const again = await engine.enqueue({ name: 'idx.a', version: 1, payload: {}, options: { idempotencyKey: 'k' } });
    expect(again).toMatchObject({ id: holder.id, created: false });
    const lookups = double.queries.filter((query) => query.method === 'find');
    expect(lookups.map((query) => query.plan)).toEqual([{ index: 'idempotency', examined: 1, sortedByIndex: false }]);
  });
});

describe('mongodb store: index changes', () => {
  it('never drops an index in the way of a wanted one while others may use it: the start fails naming it (86, 85)', async () => {
    const { double } = await openOnDouble();
    // An idempotency index changed by hand under the store's name: dropping it would admit duplicates meanwhile.
    jobsOf(double).dropIndex('idempotency');
    const handMade = { name: 'idempotency', key: { idempotencyKey: 1 as const }, unique: true, sparse: true };
    jobsOf(double).createIndex(handMade);
    const changed = await rejection(openOnDouble({}, {}, double));
    expect(changed).toMatchObject({ code: 'UNAVAILABLE', retryable: false });
    expect(changed.message).toContain("db.workq_jobs.dropIndex('idempotency')");
    // The wanted listing index's definition under another name (85).
    jobsOf(double).dropIndex('idempotency');
    jobsOf(double).dropIndex('list_by_name');
    jobsOf(double).createIndex({ name: 'by_name_by_hand', key: { name: 1, state: 1, _id: 1 } });
    const twin = await rejection(openOnDouble({}, {}, double));
    expect(twin.message).toContain("dropIndex('by_name_by_hand')");
    const names = double.indexes(DB, 'workq_jobs').map((index) => index.name);
    expect(names).toContain('by_name_by_hand');
    expect(double.indexBuilds.every((build) => !('dropIndexes' in build.options))).toBe(true);
  });

  it('changes a TTL in place under the majority write concern, and takes a commit quorum on mongos', async () => {
    const double = createMongoDriverDouble({ replicaSet: 'rs0' });
    await openOnDouble({}, {}, double);
    // A mongos answers hello with `msg: 'isdbgrid'` and no replica set name.
    const commands: Record<string, unknown>[] = [];
    const original = DoubleDb.prototype.command;
    vi.spyOn(DoubleDb.prototype, 'command').mockImplementation(async function (this: DoubleDb, body) {
      commands.push(body);
      if (body.hello === 1) return { isWritablePrimary: true, msg: 'isdbgrid', ok: 1 };
      return original.call(this, body);
    });
    double.indexBuilds.length = 0;
    await openOnDouble({ historyRetentionMs: 60_000, indexBuildTimeoutMS: 5_000 }, {}, double);
    const ttl = double.indexes(DB, 'workq_jobs').find((index) => index.name === 'history_ttl');
    expect(ttl?.expireAfterSeconds).toBe(60);
    expect(commands.find((body) => 'collMod' in body)?.writeConcern).toEqual({
      w: 'majority',
      j: true,
      wtimeout: 5_000,
    });
    expect(double.indexBuilds.length).toBeGreaterThan(0);
    for (const build of double.indexBuilds) expect(build.options).toMatchObject({ commitQuorum: 'majority' });
  });

  it('opens a store whose claim index an earlier version made, and leaves that index to the servers still using it', async () => {
    const { double, engine } = await openOnDouble();
    jobsOf(double).dropIndex('claim_by_version');
    const earlier = {
      name: 'claim',
      key: { name: 1 as const, priority: -1 as const, orderKey: 1 as const, _id: 1 as const },
      partialFilterExpression: { state: 'waiting' },
    };
    jobsOf(double).createIndex(earlier);
    const { engine: upgraded } = await openOnDouble({}, {}, double);
    const { id } = await engine.enqueue({ name: 'up.a', version: 1, payload: {} });
    expect((await upgraded.claim({ name: 'up.a', maxVersion: 1, limit: 1, workerId: 'w' }))[0]?.id).toBe(id);
    const names = () => double.indexes(DB, 'workq_jobs').map((index) => index.name);
    expect(names()).toEqual(expect.arrayContaining(['claim', 'claim_by_version']));
    // Once every server runs this version, the admin step drops it; a second run finds nothing to drop.
    const db = double.client.db(DB) as unknown as Db;
    expect(await dropRetiredMongoIndexes(db)).toEqual(['workq_jobs.claim']);
    expect(names()).not.toContain('claim');
    expect(names()).toContain('claim_by_version');
    expect(await dropRetiredMongoIndexes(db)).toEqual([]);
  });

  it('refuses a history retention beyond what a TTL index takes with VALIDATION, naming the option', async () => {
    const error = await rejection(openOnDouble({ historyRetentionMs: 100 * 365 * 86_400_000 }));
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toContain('historyRetentionMs');
    expect((await rejection(openOnDouble({ historyRetentionMs: 0 }))).code).toBe('VALIDATION');
  });
});
