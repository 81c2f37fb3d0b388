import { until } from '@workq/test-support';
import { describe, expect, it } from 'vitest';
import { DB, storesOnDouble } from './support/mongodb-on-double.ts';

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
