import { setTimeout as sleep } from 'node:timers/promises';
import { startMongoWireDouble, until } from '@workq/test-support';
import { afterAll, afterEach, describe, expect, it, onTestFinished } from 'vitest';
import type { Store } from '../src/engine/store.ts';
import { createMongoStore, type MongoStoreOptions } from '../src/stores/mongodb/index.ts';

// The MongoDB store's change-stream wake-ups under the real driver, against
// a fake primary that speaks the wire protocol: each store has a database
// of its own, and the faults are the server's fail points.
const wire = await startMongoWireDouble();
const opened: Store[] = [];
let databases = 0;
afterEach(async () => {
  wire.configureFailPoint('failCommand', 'off');
  await Promise.all(opened.splice(0).map((store) => store.close()));
});
afterAll(() => wire.close());

/** A store on its own database of the wire double, wake-ups on. */
async function openOnWire(options: Partial<MongoStoreOptions> = {}) {
  const dbName = `workq_notify_${++databases}`;
  const store = await createMongoStore({ url: wire.url, dbName, ...options });
  opened.push(store);
  return { dbName, store };
}

/** The change streams opened on `dbName` so far (each `aggregate` whose pipeline starts with `$changeStream`). */
const streamsOpened = (dbName: string) =>
  wire.commands.filter((command) => command.db === dbName && command.body.pipeline?.[0]?.$changeStream !== undefined);

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
  const { dbName, store } = await openOnWire();
  const notifier = store.notifier!;
  const heard: string[] = [];
  await notifier.subscribe((message) => heard.push(message));
  return { dbName, store, notifier, heard };
}

describe('mongodb store: change-stream wake-ups', () => {
  it('watches at majority read concern, the only one $changeStream takes, so the default store starts on a replica set', async () => {
    // The default options: notify on, and the database handle's read concern `local`, which a watch would inherit.
    const { dbName, store } = await openOnWire();
    const heard: string[] = [];
    await store.notifier!.subscribe((name) => heard.push(name));
    await store.notifier!.publish('wake.majority');
    await until(() => heard.includes('wake.majority'));
    for (const stream of streamsOpened(dbName))
      expect([undefined, 'majority']).toContain(stream.body.readConcern?.level);
  });

  it("a stream that cannot open fails no start-up: it is warned of with the server's reason, retried, and then '*'", async () => {
    const warnings = warningsHeard();
    const { store } = await openOnWire();
    wire.configureFailPoint('failCommand', { times: 1 }, { failCommands: ['aggregate'], errorCode: 13 });
    const heard: string[] = [];
    await store.notifier!.subscribe((message) => heard.push(message));
    await until(() => warnings.length > 0);
    expect(warnings).toEqual([
      expect.stringMatching(/wake-up change stream on MongoDB at 127\.0\.0\.1:\d+ failed: Unauthorized \(13\)/),
    ]);
    await until(() => heard.includes('*'));
    await store.notifier!.publish('after.retry');
    await until(() => heard.includes('after.retry'));
  });

  it("publishes in order, and a failed publish is followed by a resync ('*') before any later message", async () => {
    const warnings = warningsHeard();
    const { notifier, heard } = await subscribed();
    await Promise.all(['first', 'second', 'third'].map((message) => notifier.publish(message)));
    // The connection fails before the insert is applied, and again on the driver's retry.
    wire.configureFailPoint('failCommand', { times: 2 }, { failCommands: ['insert'], closeConnection: true });
    const lost = notifier.publish('lost');
    const later = notifier.publish('later');
    await expect(lost).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await later;
    await until(() => heard.includes('later'));
    expect(heard).toEqual(['first', 'second', 'third', '*', 'later']);
    await until(() => warnings.length > 0);
    expect(warnings).toEqual([expect.stringMatching(/wake-up could not be published to MongoDB at 127\.0\.0\.1:\d+/)]);
  });

  it('delivers published messages to subscribers until they unsubscribe', async () => {
    const { store } = await openOnWire();
    const notifier = store.notifier!;
    const heard: string[] = [];
    const unsubscribe = await notifier.subscribe((name) => heard.push(name));
    await notifier.publish('wake.a');
    await until(() => heard.length === 1);
    await unsubscribe();
    await notifier.publish('wake.b');
    await sleep(20);
    expect(heard).toEqual(['wake.a']);
    await notifier.subscribe(() => {});
    await store.close();
  });

  it('reopens a stream an invalidate ended (its collection dropped), recreating the collection, and sends "*"', async () => {
    const { dbName, notifier, heard } = await subscribed();
    wire.state.databases.get(dbName)?.delete('workq_wakeups');
    wire.invalidate(dbName, 'workq_wakeups');
    await until(() => heard.includes('*'));
    expect(wire.state.collection(dbName, 'workq_wakeups')?.options).toMatchObject({ capped: true });
    await notifier.publish('after.invalidate');
    await until(() => heard.includes('after.invalidate'));
  });

  it('keeps no stream open once the store is closed, even one being reopened', async () => {
    const { dbName, store } = await openOnWire();
    await store.notifier!.subscribe(() => {});
    // The stream's next getMore fails with a non-resumable error: it is being reopened when the store closes.
    wire.configureFailPoint('failCommand', { times: 1 }, { failCommands: ['getMore'], errorCode: 286 });
    await until(() => wire.commands.some((command) => command.db === dbName && command.outcome === 286));
    await store.close();
    const opens = streamsOpened(dbName).length;
    await sleep(300);
    expect(streamsOpened(dbName)).toHaveLength(opens);
    const lastGetMore = wire.commands.findLast((command) => command.db === dbName && command.name === 'getMore');
    await sleep(100);
    expect(wire.commands.findLast((command) => command.db === dbName && command.name === 'getMore')).toBe(lastGetMore);
  });

  it("rides out a dropped connection, which the driver resumes from, without '*'; a non-resumable error is an end, said and reopened", async () => {
    const warnings = warningsHeard();
    const { notifier, heard } = await subscribed();
    await notifier.publish('before.blip');
    await until(() => heard.includes('before.blip'));
    // A network blip: the driver's getMore fails with a resumable error; it closes that cursor and resumes.
    wire.dropConnections();
    // Once the driver has seen its connections go (a publish caught in the blip would be lost, and say so with '*').
    await sleep(200);
    await notifier.publish('after.blip');
    await until(() => heard.includes('after.blip'));
    // Long enough for a reopen after the first backoff (100 ms), had the driver's resume been taken for an end.
    await sleep(300);
    expect(heard).toEqual(['before.blip', 'after.blip']);
    expect(warnings).toEqual([]);
    // A non-resumable error on the stream's next getMore (its history lost from the oplog) is an end.
    wire.configureFailPoint('failCommand', { times: 1 }, { failCommands: ['getMore'], errorCode: 286 });
    await until(() => heard.includes('*'));
    expect(warnings).toEqual([expect.stringMatching(/failed: ChangeStreamHistoryLost \(286\)/)]);
    await notifier.publish('after.reopen');
    await until(() => heard.includes('after.reopen'));
  });
});
