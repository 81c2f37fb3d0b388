import { startMongoWireDouble, until } from '@workq/test-support';
import { MongoServerError } from 'mongodb';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { DB, mongoStoreOnDouble, storesOnDouble } from './support/mongodb-on-double.ts';

const openOnDouble = storesOnDouble();

/** The messages of the store's warnings (Node's `warning` events) from now until the test ends. */
function warningsHeard(): string[] {
  const heard: string[] = [];
  const listener = (warning: Error) => {
    if (warning.name === 'WorkqWarning') heard.push(warning.message);
  };
  process.on('warning', listener);
  onTestFinished(() => void process.off('warning', listener));
  return heard;
}

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

  it("a stream that cannot open fails no start-up: it is warned of with the server's reason, retried, and then '*'", async () => {
    const warnings = warningsHeard();
    const { store, double } = await openOnDouble({ notify: true }, { replicaSet: 'rs0' });
    const refusal = {
      message: 'not authorized on workq_store_test to execute command',
      code: 13,
      codeName: 'Unauthorized',
    };
    double.watchFaults.push(new MongoServerError(refusal));
    const heard: string[] = [];
    await store.notifier!.subscribe((message) => heard.push(message));
    await until(() => warnings.length > 0);
    expect(warnings).toEqual([
      expect.stringMatching(
        /wake-up change stream on MongoDB at driver-double:27017 failed: Unauthorized \(13\): not authorized/,
      ),
    ]);
    await until(() => heard.includes('*'));
    await store.notifier!.publish('after.retry');
    await until(() => heard.includes('after.retry'));
  });

  it("rides out the driver's resume: the close it forwards is no end, so no reopen and no '*'", async () => {
    const { double, notifier, heard, stream } = await subscribed();
    stream.resume();
    await notifier.publish('after.resume');
    await until(() => heard.includes('after.resume'));
    // Long enough for a reopen after the first backoff (100 ms), had the close been taken for an end.
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(heard).toEqual(['after.resume']);
    expect([...double.changeStreams]).toEqual([stream]);
  });

  it("publishes in order, and a failed publish is followed by a resync ('*') before any later message", async () => {
    const warnings = warningsHeard();
    const { double, notifier, heard } = await subscribed();
    await Promise.all(['first', 'second', 'third'].map((message) => notifier.publish(message)));
    // The connection fails before the insert is applied, and again on the driver's retry.
    double.failWrite({ collection: 'workq_wakeups', appliedDocs: 0, times: 2 });
    const lost = notifier.publish('lost');
    const later = notifier.publish('later');
    await expect(lost).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await later;
    await until(() => heard.includes('later'));
    expect(heard).toEqual(['first', 'second', 'third', '*', 'later']);
    await until(() => warnings.length > 0);
    expect(warnings).toEqual([
      expect.stringMatching(/wake-up could not be published to MongoDB at driver-double:27017/),
    ]);
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

  it('reopens a stream a non-resumable error ended, says why, and tells the listener "*"', async () => {
    const warnings = warningsHeard();
    const { notifier, heard, stream } = await subscribed();
    stream.fail();
    await until(() => heard.includes('*'));
    await until(() => warnings.length > 0);
    expect(warnings).toEqual([expect.stringMatching(/failed: ChangeStreamHistoryLost \(286\)/)]);
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

describe('mongodb store: change-stream wake-ups under the real driver (wire double)', () => {
  it("rides out a dropped connection, which the driver resumes from, without '*'; a non-resumable error is an end, said and reopened", async () => {
    const warnings = warningsHeard();
    const double = await startMongoWireDouble({ database: DB });
    const store = await createMongoStore({ url: double.url, dbName: DB });
    onTestFinished(async () => {
      await store.close();
      await double.close();
    });
    const heard: string[] = [];
    await store.notifier!.subscribe((message) => heard.push(message));
    await store.notifier!.publish('before.blip');
    await until(() => heard.includes('before.blip'));
    // A network blip: the driver's getMore fails with a resumable error; it closes that cursor and resumes.
    double.dropConnections();
    // Once the driver has seen its connections go (a publish caught in the blip would be lost, and say so with '*').
    await new Promise((resolve) => setTimeout(resolve, 200));
    await store.notifier!.publish('after.blip');
    await until(() => heard.includes('after.blip'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(heard).toEqual(['before.blip', 'after.blip']);
    expect(warnings).toEqual([]);
    // A non-resumable error on the stream's next getMore (its history lost from the oplog) is an end.
    double.configureFailPoint('failCommand', { times: 1 }, { failCommands: ['getMore'], errorCode: 286 });
    await until(() => heard.includes('*'));
    expect(warnings).toEqual([expect.stringMatching(/ChangeStreamHistoryLost \(286\)/)]);
    await store.notifier!.publish('after.reopen');
    await until(() => heard.includes('after.reopen'));
  });
});
