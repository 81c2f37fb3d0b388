import { connect } from 'node:net';
import { startMongoWireDouble, startTcpProxy } from '@workq/test-support';
import { expect, it } from 'vitest';
import type { ClaimRequest, LeaseRef, Store } from '../src/engine/store.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { newJob, rejection } from './support/fixtures.ts';

/**
 * A store call written to a connection the server has just closed, at the moment Node has destroyed the
 * socket but the driver has not yet seen it close: the driver waits for the write to drain, which a
 * destroyed socket never does, and no time limit of its own ends that wait. The store abandons each call
 * to the server after the wait for a primary plus the wait for a majority.
 *
 * Each case prepares what it needs before the cut and returns the call to write in the cut.
 */
const calls: Record<string, (store: Store) => Promise<(store: Store) => Promise<unknown>>> = {
  insert: async () => (store) => store.insertJobs([newJob('cut')]),
  debounce: async () => (store) => store.debounceJobs([newJob('cut', { debounceKey: 'k' })]),
  claim: async (store) => {
    // A claim before the cut measures the database clock, so the claim's own write is what meets the cut.
    await store.claimJobs(claimOf('cut'));
    await store.insertJobs([newJob('cut')]);
    return (opened) => opened.claimJobs(claimOf('cut'));
  },
  limitedClaim: async (store) => {
    // A limit makes the claim the fenced transaction; a claim before the cut measures the database clock.
    await store.updateQueueSettings('cut', { concurrency: 5 }, new Date());
    await store.claimLimitedJobs(claimOf('cut'));
    await store.insertJobs([newJob('cut')]);
    return (opened) => opened.claimLimitedJobs(claimOf('cut'));
  },
  ack: async (store) => {
    const lease = await claimed(store);
    return (opened) => opened.completeJobs([{ ...lease, result: 'done' }], new Date());
  },
  moveJob: async (store) => {
    const lease = await claimed(store);
    return (opened) => opened.moveJob(lease, newJob('next'), new Date());
  },
  getJob: async () => (store) => store.getJob('cut'),
  wakeup: async (store) => {
    const notifier = store.notifier;
    if (!notifier) throw new Error('the store has no notifier');
    await notifier.publish('warm');
    return () => notifier.publish('cut');
  },
};

function claimOf(name: string): ClaimRequest {
  return {
    name,
    minVersion: 1,
    maxVersion: 1,
    limit: 1,
    leaseToken: 'token-cut',
    workerId: 'w',
    leaseMs: 60_000,
    now: new Date(),
  };
}

/** A job inserted and claimed before the cut: the lease an ack or a move in the cut holds. */
async function claimed(store: Store): Promise<LeaseRef> {
  await store.insertJobs([newJob('held')]);
  const [job] = await store.claimJobs(claimOf('held'));
  if (!job?.leaseToken) throw new Error('the job was not claimed');
  return { id: job.id, leaseToken: job.leaseToken };
}

it.each(Object.entries(calls))(
  'answers %s written to a connection the server has just closed with a retryable UNAVAILABLE',
  async (_, prepare) => {
    const double = await startMongoWireDouble({ database: 'closed_connection' });
    const proxy = await startTcpProxy('127.0.0.1', double.port);
    double.announce(`127.0.0.1:${proxy.port}`);
    const url = new URL(double.url);
    url.port = String(proxy.port);
    url.searchParams.set('serverSelectionTimeoutMS', '300');
    url.searchParams.set('wtimeoutMS', '300');
    let store: Store | undefined;
    try {
      store = await createMongoStore({ url: url.toString() });
      // The pool now holds an idle connection through the proxy.
      await store.insertJobs([newJob('before')]);
      const call = await prepare(store);

      // A connection of our own through the proxy hears the cut in the same turn of the event loop as the
      // store's: in the turn's check phase (setImmediate) the store's sockets are destroyed, their `close`
      // events not yet delivered.
      const witness = connect(proxy.port, '127.0.0.1');
      await new Promise((resolve) => witness.once('connect', resolve));
      const opened = store;
      // Wrapped, so that the outer promise settles when the insert is issued, not when it is answered.
      const issued = new Promise<{ pending: Promise<unknown> }>((resolve) => {
        witness.once('end', () => setImmediate(() => resolve({ pending: call(opened) })));
      });
      proxy.cut();

      const started = performance.now();
      const outcome = await Promise.race([
        rejection((await issued).pending),
        new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 5000)),
      ]);
      expect(outcome).not.toBe('still waiting');
      expect(outcome).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
      expect(performance.now() - started).toBeLessThan(5000);
    } finally {
      proxy.restore();
      await store?.close();
      await proxy.close();
      await double.close();
    }
  },
);
