import { connect } from 'node:net';
import { startMongoWireDouble, startTcpProxy } from '@workq/test-support';
import { expect, it } from 'vitest';
import type { Store } from '../src/engine/store.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { newJob, rejection } from './support/fixtures.ts';

/**
 * An enqueue written to a connection the server has just closed, at the moment Node has destroyed the
 * socket but the driver has not yet seen it close: the driver waits for the write to drain, which a
 * destroyed socket never does, and no time limit of its own ends that wait. The store abandons each call
 * of an enqueue after the wait for a primary plus the wait for a majority.
 */
const enqueues = {
  insert: (store: Store) => store.insertJobs([newJob('cut')]),
  debounce: (store: Store) => store.debounceJobs([newJob('cut', { debounceKey: 'k' })]),
};

it.each(Object.entries(enqueues))(
  'answers %s written to a connection the server has just closed with a retryable UNAVAILABLE',
  async (_, enqueue) => {
    const double = await startMongoWireDouble({ database: 'closed_connection' });
    const proxy = await startTcpProxy('127.0.0.1', double.port);
    double.announce(`127.0.0.1:${proxy.port}`);
    const url = new URL(double.url);
    url.port = String(proxy.port);
    url.searchParams.set('serverSelectionTimeoutMS', '300');
    url.searchParams.set('wtimeoutMS', '300');
    let store: Store | undefined;
    try {
      store = await createMongoStore({ url: url.toString(), notify: false });
      // The pool now holds an idle connection through the proxy.
      await store.insertJobs([newJob('before')]);

      // A connection of our own through the proxy hears the cut in the same turn of the event loop as the
      // store's: in the turn's check phase (setImmediate) the store's sockets are destroyed, their `close`
      // events not yet delivered.
      const witness = connect(proxy.port, '127.0.0.1');
      await new Promise((resolve) => witness.once('connect', resolve));
      const opened = store;
      // Wrapped, so that the outer promise settles when the insert is issued, not when it is answered.
      const issued = new Promise<{ insert: Promise<unknown> }>((resolve) => {
        witness.once('end', () => setImmediate(() => resolve({ insert: enqueue(opened) })));
      });
      proxy.cut();

      const started = performance.now();
      const outcome = await Promise.race([
        rejection((await issued).insert),
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
