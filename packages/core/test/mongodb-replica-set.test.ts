import type { Doc } from '@workq/test-support';
import { describe, expect, it } from 'vitest';
import { rejection } from './support/fixtures.ts';
import { DB, storesOnDouble } from './support/mongodb-on-double.ts';

// The MongoDB store on the driver double set up as a replica set's member,
// for what a replica set does that a single server does not: secondaries
// behind the primary, failovers that cut a write off, a majority that cannot
// acknowledge, claims racing each other.

const openOnDouble = storesOnDouble();
const replicaSet = { replicaSet: 'rs0' };
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
    const lagging = { ...replicaSet, readPreference: 'secondaryPreferred', laggingSecondary: true };
    const { double, engine, store } = await openOnDouble({}, lagging);
    const { id } = await engine.enqueue({ name: 'rp.a', version: 1, payload: {} });
    const [job] = await engine.claim({ name: 'rp.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(job?.id).toBe(id);
    const keyed = { name: 'rp.b', version: 1, payload: {}, options: { idempotencyKey: 'k' } };
    const first = await engine.enqueue(keyed);
    expect(await engine.enqueue(keyed)).toMatchObject({ id: first.id, created: false });
    expect((await store.getJob(id))?.state).toBe('active');
    expect(new Set(double.queries.map((query) => query.readPreference))).toEqual(new Set(['primary']));
  });
});

describe('mongodb store on a replica set: claims', () => {
  const isLeased = (doc: Doc) => doc.state === 'active';

  it('a lease write cut off after the server applied it is retried: the claim gets its jobs', async () => {
    const { double, engine } = await openOnDouble({}, replicaSet);
    await engine.enqueueMany(jobs(3, 'cut.a'));
    double.failWrite({ collection: 'workq_jobs', when: isLeased });
    const claimed = await engine.claim({ name: 'cut.a', maxVersion: 1, limit: 3, workerId: 'w' });
    expect(claimed.map((job) => job.attempt)).toEqual([1, 1, 1]);
  });

  it('a lease write whose retry fails too gives its jobs back before the claim fails UNAVAILABLE', async () => {
    const { double, engine } = await openOnDouble({}, replicaSet);
    await engine.enqueueMany(jobs(3, 'cut.b'));
    double.failWrite({ collection: 'workq_jobs', when: isLeased, times: 2 });
    const error = await rejection(engine.claim({ name: 'cut.b', maxVersion: 1, limit: 3, workerId: 'w' }));
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    const again = await engine.claim({ name: 'cut.b', maxVersion: 1, limit: 3, workerId: 'w' });
    expect(again.map((job) => job.attempt)).toEqual([1, 1, 1]);
  });

  it('a claim makes one write when no delayed job of its name has come due', async () => {
    const { double, engine, store, clock } = await openOnDouble({}, replicaSet);
    await engine.enqueueMany(jobs(3, 'one.a'));
    await engine.enqueue({ name: 'one.a', version: 1, payload: {}, options: { delayMs: 60_000 } });
    double.writes.length = 0;
    const request = { name: 'one.a', minVersion: 1, maxVersion: 1, limit: 2, leaseMs: null, now: clock.now() };
    expect(await store.claimJobs({ ...request, leaseToken: 't', workerId: 'w' })).toHaveLength(2);
    expect(double.writes).toHaveLength(1);
  });

  it('a claim whose candidates competing claims take every time still leases a ready job', async () => {
    const { double, engine } = await openOnDouble({}, replicaSet);
    await engine.enqueueMany(jobs(40, 'race.a'));
    const data = double.collection(DB, 'workq_jobs')!;
    // Another claimer leases whatever this one has just read as candidates, before it can.
    double.onRead = (query, found) => {
      if (query.filter.state !== 'waiting' || !query.sort) return;
      for (const doc of found) data.replace(doc, { ...doc, state: 'active', leaseToken: 'competitor' });
    };
    const claimed = await engine.claim({ name: 'race.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(claimed).toHaveLength(1);
    expect(claimed[0]?.leaseToken).not.toBe('competitor');
  });
});

describe('mongodb store on a replica set: bounded writes', () => {
  it('fails an enqueue, a claim, an ack and a moveTo with TIMEOUT when no majority acknowledges, instead of waiting', async () => {
    const { double, engine } = await openOnDouble({ writeTimeoutMS: 50 }, replicaSet);
    await engine.enqueue({ name: 'wt.b', version: 1, payload: {} });
    await engine.enqueue({ name: 'wt.b', version: 1, payload: {} });
    const [job, next] = await engine.claim({ name: 'wt.b', maxVersion: 1, limit: 2, workerId: 'w' });
    double.majorityAvailable = false;
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
    const { double, engine } = await openOnDouble({ writeTimeoutMS: 50 }, replicaSet);
    const keyed = { name: 'wt.key', version: 1, payload: {}, options: { idempotencyKey: 'resent' } };
    double.majorityAvailable = false;
    expect(await rejection(engine.enqueue(keyed))).toMatchObject({ code: 'TIMEOUT' });
    // The resend meets the first insert, which holds the key on the primary only: not an answer yet.
    expect(await rejection(engine.enqueue(keyed))).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    double.majorityAvailable = true;
    expect(await engine.enqueue(keyed)).toMatchObject({ created: false });
  });

  it('bounds the index builds at start-up: with no majority to commit them, opening fails with TIMEOUT', async () => {
    const { double } = await openOnDouble({}, replicaSet);
    double.collection(DB, 'workq_jobs')?.dropIndex('lease_expiry');
    double.majorityAvailable = false;
    const error = await rejection(within(openOnDouble({ indexBuildTimeoutMS: 50 }, {}, double), 3_000));
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toMatch(/index/);
    expect(double.indexBuilds.at(-1)?.options).toMatchObject({ maxTimeMS: 50, commitQuorum: 'majority' });
  });
});
