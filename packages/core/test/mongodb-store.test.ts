import { describe, expect, it } from 'vitest';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { rejection } from './support/fixtures.ts';
import { CONFORMANCE_STORE_OPTIONS } from './support/mongodb-conformance.ts';
import { DB, storesOnDouble } from './support/mongodb-on-double.ts';

const openOnDouble = storesOnDouble();

describe('mongodb store: durability', () => {
  it('sends every write with majority, journaled, bounded write concern, transactions included', async () => {
    const { double, engine, store } = await openOnDouble({ writeTimeoutMS: 2_500 });
    await engine.enqueueMany([
      { name: 'wc.a', version: 1, payload: { n: 1 } },
      { name: 'wc.a', version: 1, payload: { n: 2 } },
      { name: 'wc.a', version: 1, payload: { n: 3 } },
      { name: 'wc.a', version: 1, payload: { n: 4 } },
    ]);
    const [first, second, third] = await engine.claim({ name: 'wc.a', maxVersion: 1, limit: 4, workerId: 'w' });
    await engine.complete(first!, { ok: true });
    await engine.fail(second!, { message: 'boom' });
    await engine.moveTo(third!, { name: 'wc.b', version: 1, payload: {} });
    await engine.cancel(third!.id);
    await store.registerSchema({
      name: 'wc.a',
      version: 1,
      fingerprint: 'f',
      jsonSchema: {},
      registeredAt: new Date(),
    });
    const worker = { id: 'w', host: 'h', name: 'wc.a', minVersion: 1, maxVersion: 1, pid: 1, startedAt: new Date() };
    await store.recordWorker({ ...worker, seenAt: new Date() }, { maxWorkers: 10, idleBefore: new Date(0) });
    await engine.prune();
    // The fourth job's lease, swept as if it had expired.
    const hourLater = new Date(Date.now() + 3_600_000);
    await store.requeueExpiredLeases(hourLater, { message: 'lost', code: 'LEASE_EXPIRED', at: hourLater });

    const methods = new Set(double.writes.map((write) => write.method));
    expect(methods).toEqual(new Set(['insertMany', 'bulkWrite', 'updateOne', 'insertOne']));
    const durable = { w: 'majority', journal: true, wtimeoutMS: 2_500 };
    for (const write of double.writes.filter((w) => !w.inTransaction)) expect(write.writeConcern).toEqual(durable);
    expect(double.transactions).toEqual([
      expect.objectContaining({
        writeConcern: { w: 'majority', journal: true, wtimeoutMS: 3_500 },
        maxCommitTimeMS: 2_500,
      }),
    ]);
    expect(double.writes.filter((write) => write.inTransaction).map((write) => write.method)).toEqual([
      'updateOne',
      'insertOne',
    ]);
  });

  it('keeps a job id as _id and payloads as exact JSON, including $-prefixed and dotted keys', async () => {
    const { double, engine, store } = await openOnDouble();
    const payload = { $where: 'x', 'a.b': [1, { $ne: null }], nested: { $ref: '#/x' }, text: '$name' };
    const { id } = await engine.enqueue({ name: 'json.a', version: 1, payload });
    const stored = double.collection(DB, 'workq_jobs')?.docs.get(`s:${id}`);
    expect(stored?._id).toBe(id);
    expect(typeof stored?.payload).toBe('string');
    expect((await store.getJob(id))?.payload).toEqual(payload);
  });
});

describe('mongodb store: duplicate keys', () => {
  it('the double rejects a duplicate idempotency key with the driver’s duplicate-key error', async () => {
    const { double, engine } = await openOnDouble();
    await engine.enqueue({ name: 'dup.a', version: 1, payload: {}, options: { idempotencyKey: 'k' } });
    const data = double.collection(DB, 'workq_jobs');
    const existing = [...(data?.docs.values() ?? [])][0];
    const copy = { ...existing, _id: 'another-id' };
    expect(() => data?.insert(copy)).toThrow(expect.objectContaining({ code: 11000 }));
    expect(() => data?.insert({ ...copy, idempotencyKey: null })).not.toThrow();
    expect(() => data?.insert({ ...copy, _id: 'third', idempotencyKey: null })).not.toThrow();
  });

  it('returns the job holding a key with created: false, across batches and within one', async () => {
    const { engine, store } = await openOnDouble();
    const first = await engine.enqueue({
      name: 'dup.b',
      version: 1,
      payload: { n: 1 },
      options: { idempotencyKey: 'k1' },
    });
    const results = await engine.enqueueMany([
      { name: 'dup.b', version: 1, payload: { n: 2 }, options: { idempotencyKey: 'k1' } },
      { name: 'dup.b', version: 1, payload: { n: 3 }, options: { idempotencyKey: 'k2' } },
      { name: 'dup.b', version: 1, payload: { n: 4 }, options: { idempotencyKey: 'k2' } },
      { name: 'dup.b', version: 1, payload: { n: 5 } },
    ]);
    expect(results.map((r) => r.created)).toEqual([false, true, false, true]);
    expect(results[0]?.id).toBe(first.id);
    expect(results[2]?.id).toBe(results[1]?.id);
    expect((await store.getJob(first.id))?.payload).toEqual({ n: 1 });
    expect(await store.listJobs({ name: 'dup.b', limit: 10 })).toHaveLength(3);
  });

  it('a moveTo whose next job hits a used key moves into the job holding it, in one transaction', async () => {
    const { engine, store } = await openOnDouble();
    const taken = await engine.enqueue({
      name: 'dup.next',
      version: 1,
      payload: {},
      options: { idempotencyKey: 'taken' },
    });
    await engine.enqueue({ name: 'dup.c', version: 1, payload: {} });
    const [job] = await engine.claim({ name: 'dup.c', maxVersion: 1, limit: 1, workerId: 'w' });
    const next = { name: 'dup.next', version: 1, payload: {}, options: { idempotencyKey: 'taken' } };
    expect(await engine.moveTo(job!, next)).toEqual({ id: taken.id, created: false, state: 'ready' });
    expect(await store.getJob(job!.id)).toMatchObject({ state: 'completed', movedTo: taken.id });
  });
});

describe('mongodb store: connections and capabilities', () => {
  it('moveTo on a server without transactions is UNAVAILABLE and names the replica set requirement', async () => {
    const { engine, store } = await openOnDouble({}, { transactions: false });
    await engine.enqueue({ name: 'tx.a', version: 1, payload: {} });
    const [job] = await engine.claim({ name: 'tx.a', maxVersion: 1, limit: 1, workerId: 'w' });
    const error = await rejection(engine.moveTo(job!, { name: 'tx.b', version: 1, payload: {} }));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toMatch(/replica set/);
    expect((await store.getJob(job!.id))?.state).toBe('active');
  });

  it('declares notify only when asked and the server can run change streams', async () => {
    expect((await openOnDouble({ notify: false }, { replicaSet: 'rs0' })).store.capabilities.notify).toBe(false);
    expect((await openOnDouble({ notify: true })).store.notifier).toBeUndefined();
    const { store, double } = await openOnDouble({ notify: true }, { replicaSet: 'rs0' });
    expect(store.capabilities.notify).toBe(true);
    expect(store.notifier).toBeDefined();
    expect(double.collection(DB, 'workq_wakeups')?.options).toMatchObject({ capped: true });
  });

  it('close is idempotent and leaves a given client open', async () => {
    const { store, double } = await openOnDouble();
    await store.close();
    await store.close();
    expect((double.client as unknown as { closed: boolean }).closed).toBe(false);
  });

  it('never puts a non-string id into a query', async () => {
    const { engine, store } = await openOnDouble();
    await engine.enqueue({ name: 'inj.a', version: 1, payload: {} });
    const probe = { $ne: null } as unknown as string;
    expect(await store.getJob(probe)).toBeNull();
    expect(await store.cancelJob(probe, new Date())).toBeNull();
    expect(await store.completeJobs([{ id: probe, leaseToken: probe, result: null }], new Date())).toEqual([]);
  });

  it('fails fast with UNAVAILABLE, without credentials in the message, when no server answers', async () => {
    const started = Date.now();
    const error = await rejection(
      createMongoStore({ url: 'mongodb://user:s3cret@127.0.0.1:9/workq', serverSelectionTimeoutMS: 500 }),
    );
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('127.0.0.1:9');
    expect(error.message).not.toContain('s3cret');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('rejects a missing url and client, and an invalid url, as VALIDATION', async () => {
    expect((await rejection(createMongoStore({}))).code).toBe('VALIDATION');
    expect((await rejection(createMongoStore({ url: 'mongodb://a:b@/??' }))).code).toBe('VALIDATION');
  });
});

describe('mongodb store: the conformance harness', () => {
  it('keeps the suite’s finished jobs, dated by its manual clock, past a TTL monitor running today', async () => {
    const { double, engine } = await openOnDouble(CONFORMANCE_STORE_OPTIONS, { ttlMonitor: true });
    const { id } = await engine.enqueue({ name: 'ttl.a', version: 1, payload: {} });
    const [job] = await engine.claim({ name: 'ttl.a', maxVersion: 1, limit: 1, workerId: 'w' });
    await engine.complete(job!);
    expect(double.expireTtl(new Date())).toBe(0);
    expect((await engine.get(id)).state).toBe('completed');
  });
});
