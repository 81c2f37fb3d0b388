import { describe, expect, it } from 'vitest';
import { createMongoDriverDouble } from './support/mongodb-double.ts';
import { DB, storesOnDouble } from './support/mongodb-on-double.ts';

const openOnDouble = storesOnDouble();

describe('mongodb store: indexes', () => {
  it('creates the claim, idempotency, lease, TTL, listing and registry indexes as specified', async () => {
    const { double } = await openOnDouble({ historyRetentionMs: 3 * 86_400_000 });
    const jobs = Object.fromEntries(double.indexes(DB, 'workq_jobs').map((index) => [index.name, index]));
    expect(jobs.claim).toMatchObject({
      key: { name: 1, priority: -1, orderKey: 1, _id: 1 },
      partialFilterExpression: { state: 'waiting' },
    });
    expect(Object.keys(jobs.claim?.key ?? {})).toEqual(['name', 'priority', 'orderKey', '_id']);
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
