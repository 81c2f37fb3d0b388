import { until } from '@workq/test-support';
import { MongoServerError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { DB, mongoStoreOnDouble, storesOnDouble } from './support/mongodb-on-double.ts';

const openOnDouble = storesOnDouble();

/** A store with change-stream wake-ups, one subscriber, and what that subscriber heard. */
async function subscribed() {
  const { store, double } = await openOnDouble({ notify: true }, { replicaSet: 'rs0' });
  const notifier = store.notifier!;
  const heard: string[] = [];
  await notifier.subscribe((message) => heard.push(message));
  const [stream] = double.changeStreams;
  return { double, notifier, heard, stream: stream! };
}

describe('mongodb store: change-stream wake-ups', () => {
  it('watches at majority read concern, the only one $changeStream takes, so the default store starts on a replica set', async () => {
    // The default options: notify on, and the database handle's read concern `local`, which a watch would inherit.
    const { store } = await mongoStoreOnDouble();
    try {
      const heard: string[] = [];
      await store.notifier!.subscribe((name) => heard.push(name));
      await store.notifier!.publish('wake.majority');
      await until(() => heard.includes('wake.majority'));
    } finally {
      await store.close();
    }
  });

  it("says why a stream failed as it opened: the server error that follows the driver's close", async () => {
    const { store, double } = await openOnDouble({ notify: true }, { replicaSet: 'rs0' });
    const refusal = {
      message: 'not authorized on workq_store_test to execute command',
      code: 13,
      codeName: 'Unauthorized',
    };
    double.watchFaults.push(new MongoServerError(refusal));
    await expect(store.notifier!.subscribe(() => {})).rejects.toThrow(
      /wake-up change stream on MongoDB at driver-double:27017 failed: Unauthorized \(13\): not authorized/,
    );
  });

  it('delivers published messages to subscribers until they unsubscribe', async () => {
    const { store } = await openOnDouble({ notify: true }, { replicaSet: 'rs0' });
    const notifier = store.notifier!;
    const heard: string[] = [];
    const unsubscribe = await notifier.subscribe((name) => heard.push(name));
    await notifier.publish('wake.a');
    await until(() => heard.length === 1);
    await unsubscribe();
    await notifier.publish('wake.b');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(heard).toEqual(['wake.a']);
    await notifier.subscribe(() => {});
    await store.close();
  });

  it('reopens a stream a non-resumable error ended, and tells the listener "*"', async () => {
    const { notifier, heard, stream } = await subscribed();
    stream.fail();
    await until(() => heard.includes('*'));
    await notifier.publish('after.error');
    await until(() => heard.includes('after.error'));
    expect(stream.isClosed).toBe(true);
  });

  it('reopens a stream an invalidate ended (its collection dropped), recreating the collection, and sends "*"', async () => {
    const { double, notifier, heard, stream } = await subscribed();
    double.databases.get(DB)?.delete('workq_wakeups');
    stream.invalidate();
    await until(() => heard.includes('*'));
    expect(double.collection(DB, 'workq_wakeups')?.options).toMatchObject({ capped: true });
    await notifier.publish('after.invalidate');
    await until(() => heard.includes('after.invalidate'));
  });

  it('keeps no stream open once the store is closed, even one being reopened', async () => {
    const { double, store } = await openOnDouble({ notify: true }, { replicaSet: 'rs0' });
    await store.notifier!.subscribe(() => {});
    [...double.changeStreams][0]?.fail();
    await store.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(double.changeStreams.size).toBe(0);
  });
});
