import { failCommandAfter, startMongoWireDouble } from '@workq/test-support';
import { MongoClient } from 'mongodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { createMongoStore, type MongoStoreOptions } from '../src/stores/mongodb/index.ts';
import { rejection } from './support/fixtures.ts';
import { ManualClock } from './support/manual-clock.ts';

// The MongoDB store under the real driver, against a fake replica set
// primary that speaks the wire protocol, for what a replica set does that a
// single server does not: reads a client would send to secondaries,
// failovers that cut a write off, a majority that cannot acknowledge, claims
// racing each other. Each store has a database of its own.

const wire = await startMongoWireDouble();
const client = new MongoClient(wire.url);
const opened: Store[] = [];
let databases = 0;
afterEach(async () => {
  wire.configureFailPoint('failCommand', 'off');
  wire.configureFailPoint('onPrimaryTransactionalWrite', 'off');
  wire.majorityAvailable = true;
  wire.state.afterCommand = undefined;
  await Promise.all(opened.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await client.close();
  await wire.close();
});

/** A store on `dbName` (a fresh database unless given), through a URL with `query` added, with an engine on a manual clock. */
async function openOnWire(options: Partial<MongoStoreOptions> = {}, query = '', dbName = nextDb()) {
  const store = await createMongoStore({ url: `${wire.url}${query}`, dbName, notify: false, ...options });
  opened.push(store);
  const clock = new ManualClock();
  return { dbName, store, clock, engine: createEngine({ store, clock, leaseSweepIntervalMs: 0 }) };
}
const nextDb = () => `workq_rs_${++databases}`;

/** The commands sent to `dbName` from the `from`th on. */
const sentTo = (dbName: string, from = 0) => wire.commands.slice(from).filter((command) => command.db === dbName);
const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);
const READS = new Set(['find', 'aggregate', 'count', 'distinct']);
const jobs = (n: number, name: string) => Array.from({ length: n }, (_, i) => ({ name, version: 1, payload: { i } }));

/** Rejects if `promise` has not settled within `ms`: what a caller would see of a write that waits forever. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('mongodb store on a replica set: reads', () => {
  it('reads its own writes through a client that prefers secondaries: every read goes to the primary', async () => {
    const { dbName, engine, store } = await openOnWire({}, '&readPreference=secondaryPreferred');
    const { id } = await engine.enqueue({ name: 'rp.a', version: 1, payload: {} });
    const [job] = await engine.claim({ name: 'rp.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(job?.id).toBe(id);
    const keyed = { name: 'rp.b', version: 1, payload: {}, options: { idempotencyKey: 'k' } };
    const first = await engine.enqueue(keyed);
    expect(await engine.enqueue(keyed)).toMatchObject({ id: first.id, created: false });
    expect((await store.getJob(id))?.state).toBe('active');
    const reads = sentTo(dbName).filter((command) => READS.has(command.name));
    expect(reads.length).toBeGreaterThan(0);
    // The client's own preference would be sent as `$readPreference: { mode: 'secondaryPreferred' }`.
    expect(new Set(reads.map((read) => read.body.$readPreference?.mode ?? 'primary'))).toEqual(new Set(['primary']));
  });
});

describe('mongodb store on a replica set: claims', () => {
  it('a lease write cut off after the server applied it is retried: the claim gets its jobs', async () => {
    const { dbName, engine } = await openOnWire();
    await engine.enqueueMany(jobs(3, 'cut.a'));
    const from = wire.commands.length;
    wire.configureFailPoint('onPrimaryTransactionalWrite', { times: 1 }, { closeConnection: true });
    const claimed = await engine.claim({ name: 'cut.a', maxVersion: 1, limit: 3, workerId: 'w' });
    expect(claimed.map((job) => job.attempt)).toEqual([1, 1, 1]);
    // The lease write was sent twice: the try whose answer was lost, and the retry answered from the server's record.
    const leaseWrites = sentTo(dbName, from).filter((command) => command.name === 'update');
    expect(leaseWrites).toHaveLength(2);
    expect(leaseWrites[1]?.body.txnNumber).toEqual(leaseWrites[0]?.body.txnNumber);
  });

  it('a lease write whose retry fails too gives its jobs back before the claim fails UNAVAILABLE', async () => {
    const { engine } = await openOnWire();
    await engine.enqueueMany(jobs(3, 'cut.b'));
    // The lease write is applied and its connection cut; the retry's connection is cut before it runs.
    wire.configureFailPoint('onPrimaryTransactionalWrite', { times: 1 }, { closeConnection: true });
    failCommandAfter(wire, 1, 1, { failCommands: ['update'], closeConnection: true });
    const error = await rejection(engine.claim({ name: 'cut.b', maxVersion: 1, limit: 3, workerId: 'w' }));
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    const again = await engine.claim({ name: 'cut.b', maxVersion: 1, limit: 3, workerId: 'w' });
    expect(again.map((job) => job.attempt)).toEqual([1, 1, 1]);
  });

  it('a claim makes one write when no delayed job of its name has come due', async () => {
    const { dbName, engine, store, clock } = await openOnWire();
    await engine.enqueueMany(jobs(3, 'one.a'));
    await engine.enqueue({ name: 'one.a', version: 1, payload: {}, options: { delayMs: 60_000 } });
    const from = wire.commands.length;
    const request = { name: 'one.a', minVersion: 1, maxVersion: 1, limit: 2, leaseMs: null, now: clock.now() };
    expect(await store.claimJobs({ ...request, leaseToken: 't', workerId: 'w' })).toHaveLength(2);
    expect(sentTo(dbName, from).filter((command) => WRITES.has(command.name))).toHaveLength(1);
  });

  it('a claim whose candidates competing claims take every time still leases a ready job', async () => {
    const { dbName, engine } = await openOnWire();
    await engine.enqueueMany(jobs(40, 'race.a'));
    // Another claimer leases whatever this one has just read as candidates, before it can.
    wire.state.afterCommand = (command, answer) => {
      if (command.db !== dbName || command.name !== 'find' || command.body.filter?.state !== 'waiting') return;
      if (!command.body.sort) return;
      const data = wire.state.collection(dbName, 'workq_jobs')!;
      for (const found of (answer.cursor?.firstBatch ?? []) as { _id: string }[]) {
        const [doc] = data.match({ _id: found._id });
        if (doc) data.replace(doc, { ...doc, state: 'active', leaseToken: 'competitor' });
      }
    };
    const claimed = await engine.claim({ name: 'race.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(claimed).toHaveLength(1);
    expect(claimed[0]?.leaseToken).not.toBe('competitor');
  });
});

describe('mongodb store on a replica set: bounded writes', () => {
  it('fails an enqueue, a claim, an ack and a moveTo with TIMEOUT when no majority acknowledges, instead of waiting', async () => {
    const { engine } = await openOnWire({ writeTimeoutMS: 50 });
    await engine.enqueue({ name: 'wt.b', version: 1, payload: {} });
    await engine.enqueue({ name: 'wt.b', version: 1, payload: {} });
    const [job, next] = await engine.claim({ name: 'wt.b', maxVersion: 1, limit: 2, workerId: 'w' });
    wire.majorityAvailable = false;
    const timedOut = async (promise: Promise<unknown>) => {
      const error = await rejection(within(promise, 3_000));
      expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
      expect(error.message).toMatch(/majority/);
    };
    await timedOut(engine.enqueue({ name: 'wt.b', version: 1, payload: {} }));
    await timedOut(engine.claim({ name: 'wt.b', maxVersion: 1, limit: 1, workerId: 'w' }));
    await timedOut(engine.complete(job!));
    await timedOut(engine.moveTo(next!, { name: 'wt.c', version: 1, payload: {} }));
  });

  it('answers a resend after TIMEOUT "exists" only once a majority has the key holder, which a failover could roll back before', async () => {
    const { engine } = await openOnWire({ writeTimeoutMS: 50 });
    const keyed = { name: 'wt.key', version: 1, payload: {}, options: { idempotencyKey: 'resent' } };
    wire.majorityAvailable = false;
    expect(await rejection(engine.enqueue(keyed))).toMatchObject({ code: 'TIMEOUT' });
    // The resend meets the first insert, which holds the key on the primary only: not an answer yet. The
    // server waits for the write concern of a failed write too, so the duplicate key comes with its timeout.
    expect(await rejection(engine.enqueue(keyed))).toMatchObject({ code: 'TIMEOUT', retryable: true });
    wire.majorityAvailable = true;
    expect(await engine.enqueue(keyed)).toMatchObject({ created: false });
  });

  it('bounds the index builds at start-up: with no majority to commit them, opening fails with TIMEOUT', async () => {
    const { dbName } = await openOnWire();
    await client.db(dbName).collection('workq_jobs').dropIndex('lease_expiry');
    wire.majorityAvailable = false;
    const from = wire.commands.length;
    const error = await rejection(within(openOnWire({ indexBuildTimeoutMS: 50 }, '', dbName), 3_000));
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toMatch(/index/);
    const builds = sentTo(dbName, from).filter((command) => command.name === 'createIndexes');
    expect(builds.at(-1)?.body).toMatchObject({ maxTimeMS: 50, commitQuorum: 'majority' });
  });
});
