import { setTimeout as sleep } from 'node:timers/promises';
import { startMongoWireDouble } from '@workq/test-support';
import { MongoClient } from 'mongodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { createMongoStore, type MongoStoreOptions } from '../src/stores/mongodb/index.ts';
import { expectUnreachable, rejection } from './support/fixtures.ts';
import { ManualClock } from './support/manual-clock.ts';
import { CONFORMANCE_STORE_OPTIONS } from './support/mongodb-conformance.ts';

// The MongoDB store under the real driver, against a fake primary that
// speaks the wire protocol: each store gets a database of its own, so what
// one test sent is told apart from the others' by the database it named.
const wire = await startMongoWireDouble({ ttlMonitor: true });
/** A standalone server: no transactions, no change streams. */
const standalone = await startMongoWireDouble({ topology: 'standalone' });
const client = new MongoClient(wire.url);
const opened: Store[] = [];
let databases = 0;
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await client.close();
  await Promise.all([wire.close(), standalone.close()]);
});

/** A store on its own database of the wire double (or `server`), with an engine on a manual clock. */
async function openOnWire(options: Partial<MongoStoreOptions> = {}, server = wire) {
  const dbName = `workq_store_${++databases}`;
  const store = await createMongoStore({ url: server.url, dbName, notify: false, ...options });
  opened.push(store);
  const engine = createEngine({ store, clock: new ManualClock(), leaseSweepIntervalMs: 0 });
  return { dbName, store, engine, jobs: client.db(dbName).collection<StoredJob>('workq_jobs') };
}

/** A job as the store keeps it: its id as `_id`. */
interface StoredJob {
  _id: string;
  [field: string]: unknown;
}

const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);

describe('mongodb store: durability', () => {
  it('sends every write with majority, journaled, bounded write concern, transactions included', async () => {
    const { dbName, engine, store } = await openOnWire({ writeTimeoutMS: 2_500 });
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

    const sent = wire.commands.filter((command) => command.db === dbName);
    const writes = sent.filter((command) => WRITES.has(command.name));
    const inTransaction = (command: (typeof sent)[number]) => command.body.autocommit === false;
    expect(new Set(writes.map((write) => `${write.name} ${Object.values(write.body)[0]}`))).toEqual(
      new Set(['insert workq_jobs', 'update workq_jobs', 'insert workq_schemas', 'update workq_workers']),
    );
    const durable = { w: 'majority', j: true, wtimeout: 2_500 };
    for (const write of writes.filter((w) => !inTransaction(w))) expect(write.body.writeConcern).toEqual(durable);
    // A transaction's statements carry no write concern of their own: its commit (sent to admin) does.
    const statements = writes.filter(inTransaction);
    const transactionOf = (command: (typeof sent)[number]) =>
      `${command.body.lsid?.id?.toString('hex')}/${command.body.txnNumber}`;
    const transactions = new Set(statements.map(transactionOf));
    const commits = wire.commands.filter(
      (command) => command.name === 'commitTransaction' && transactions.has(transactionOf(command)),
    );
    expect(commits.map((commit) => [commit.body.writeConcern, commit.body.maxTimeMS])).toEqual([
      [{ w: 'majority', j: true, wtimeout: 3_500 }, 2_500],
    ]);
    expect(statements.map((write) => [write.name, write.body.writeConcern])).toEqual([
      ['update', undefined],
      ['insert', undefined],
    ]);
  });

  it('keeps a job id as _id and payloads as exact JSON, including $-prefixed and dotted keys', async () => {
    const { engine, store, jobs } = await openOnWire();
    const payload = { $where: 'x', 'a.b': [1, { $ne: null }], nested: { $ref: '#/x' }, text: '$name' };
    const { id } = await engine.enqueue({ name: 'json.a', version: 1, payload });
    const stored = await jobs.findOne({ _id: id });
    expect(stored?._id).toBe(id);
    expect(typeof stored?.payload).toBe('string');
    expect((await store.getJob(id))?.payload).toEqual(payload);
  });
});

describe('mongodb store: duplicate keys', () => {
  it('the store’s indexes refuse a second job with a used idempotency key (11000), and allow many without one', async () => {
    const { engine, jobs } = await openOnWire();
    await engine.enqueue({ name: 'dup.a', version: 1, payload: {}, options: { idempotencyKey: 'k' } });
    const existing = await jobs.findOne({});
    const copy: StoredJob = { ...existing, _id: 'another-id' };
    await expect(jobs.insertOne(copy)).rejects.toMatchObject({ code: 11000 });
    await jobs.insertOne({ ...copy, idempotencyKey: null });
    await jobs.insertOne({ ...copy, _id: 'third', idempotencyKey: null });
    expect(await jobs.countDocuments({ idempotencyKey: null })).toBe(2);
  });

  it('returns the job holding a key with created: false, across batches and within one', async () => {
    const { engine, store } = await openOnWire();
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
    const { engine, store } = await openOnWire();
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

describe('mongodb store: connections and optional parts', () => {
  it('moveTo on a server without transactions is UNAVAILABLE and names the replica set requirement', async () => {
    const { engine, store } = await openOnWire({}, standalone);
    await engine.enqueue({ name: 'tx.a', version: 1, payload: {} });
    const [job] = await engine.claim({ name: 'tx.a', maxVersion: 1, limit: 1, workerId: 'w' });
    const error = await rejection(engine.moveTo(job!, { name: 'tx.b', version: 1, payload: {} }));
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toMatch(/replica set/);
    expect((await store.getJob(job!.id))?.state).toBe('active');
  });

  it('has a notifier only when asked and the server can run change streams', async () => {
    expect((await openOnWire({ notify: false })).store.notifier).toBeUndefined();
    expect((await openOnWire({ notify: true }, standalone)).store.notifier).toBeUndefined();
    const { store, dbName } = await openOnWire({ notify: true });
    expect(store.notifier).toBeDefined();
    const [wakeups] = await client.db(dbName).listCollections({ name: 'workq_wakeups' }, { nameOnly: false }).toArray();
    expect(wakeups?.options).toMatchObject({ capped: true });
  });

  it('close is idempotent and leaves a given client open', async () => {
    const store = await createMongoStore({ client, dbName: 'workq_given_client', notify: false });
    await store.close();
    await store.close();
    expect(await client.db('workq_given_client').command({ ping: 1 })).toMatchObject({ ok: 1 });
  });

  it('never puts a non-string id into a query', async () => {
    const { engine, store } = await openOnWire();
    await engine.enqueue({ name: 'inj.a', version: 1, payload: {} });
    const probe = { $ne: null } as unknown as string;
    expect(await store.getJob(probe)).toBeNull();
    expect(await store.cancelJob(probe, new Date())).toBeNull();
    expect(await store.completeJobs([{ id: probe, leaseToken: probe, result: null }], new Date())).toEqual([]);
  });

  it('fails fast with UNAVAILABLE, without credentials in the message, when no server answers', async () => {
    await expectUnreachable(
      () => createMongoStore({ url: 'mongodb://user:s3cret@127.0.0.1:9/workq', serverSelectionTimeoutMS: 500 }),
      { names: '127.0.0.1:9', hides: 's3cret', withinMs: 10_000 },
    );
  });

  it('rejects a missing url and client, and an invalid url, as VALIDATION', async () => {
    expect((await rejection(createMongoStore({}))).code).toBe('VALIDATION');
    expect((await rejection(createMongoStore({ url: 'mongodb://a:b@/??' }))).code).toBe('VALIDATION');
  });
});

describe('mongodb store: the conformance harness', () => {
  it('keeps the suite’s finished jobs, dated by its manual clock, past a TTL monitor running today', async () => {
    const { engine, jobs } = await openOnWire(CONFORMANCE_STORE_OPTIONS);
    const { id } = await engine.enqueue({ name: 'ttl.a', version: 1, payload: {} });
    const [job] = await engine.claim({ name: 'ttl.a', maxVersion: 1, limit: 1, workerId: 'w' });
    await engine.complete(job!);
    // The wire double's TTL monitor runs before a command once a second has passed since its last run.
    await sleep(1_100);
    expect(await jobs.countDocuments({})).toBe(1);
    expect((await engine.get(id)).state).toBe('completed');
  });
});
