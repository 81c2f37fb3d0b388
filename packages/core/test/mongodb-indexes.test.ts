import { describe, expect, it } from 'vitest';
import { rejection } from './support/fixtures.ts';
import { createMongoDriverDouble } from './support/mongodb-double.ts';
import { DB, storesOnDouble } from './support/mongodb-on-double.ts';

const openOnDouble = storesOnDouble();

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
  it('rebuilds an index whose key or partial filter changed under the same name (server code 86)', async () => {
    const { double } = await openOnDouble();
    jobsOf(double).dropIndex('idempotency');
    jobsOf(double).createIndex({ name: 'idempotency', key: { idempotencyKey: 1 }, unique: true, sparse: true });
    jobsOf(double).dropIndex('delayed_due');
    jobsOf(double).createIndex({ name: 'delayed_due', key: { name: 1, runAt: 1 }, partialFilterExpression: {} });
    await openOnDouble({}, {}, double);
    const byName = Object.fromEntries(double.indexes(DB, 'workq_jobs').map((index) => [index.name, index]));
    expect(byName.idempotency).toEqual({
      name: 'idempotency',
      key: { name: 1, idempotencyKey: 1 },
      unique: true,
      partialFilterExpression: { idempotencyKey: { $type: 'string' } },
    });
    expect(byName.delayed_due?.partialFilterExpression).toEqual({ state: 'delayed' });
  });

  it('rebuilds an index whose options other than the TTL changed under the same name (server code 85)', async () => {
    const { double } = await openOnDouble();
    jobsOf(double).dropIndex('list_by_name');
    jobsOf(double).createIndex({ name: 'list_by_name', key: { name: 1, state: 1, _id: 1 }, sparse: true });
    await openOnDouble({}, {}, double);
    const listing = double.indexes(DB, 'workq_jobs').find((index) => index.name === 'list_by_name');
    expect(listing).toEqual({ name: 'list_by_name', key: { name: 1, state: 1, _id: 1 } });
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
    const names = double.indexes(DB, 'workq_jobs').map((index) => index.name);
    expect(names).toEqual(expect.arrayContaining(['claim', 'claim_by_version']));
  });

  it('refuses a history retention beyond what a TTL index takes with VALIDATION, naming the option', async () => {
    const error = await rejection(openOnDouble({ historyRetentionMs: 100 * 365 * 86_400_000 }));
    expect(error.code).toBe('VALIDATION');
    expect(error.message).toContain('historyRetentionMs');
    expect((await rejection(openOnDouble({ historyRetentionMs: 0 }))).code).toBe('VALIDATION');
  });
});
