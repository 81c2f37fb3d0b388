import { failCommandAfter, type RecordedCommand, startMongoWireDouble } from '@workq/test-support';
import {
  MongoClient,
  MongoServerError,
  MongoServerSelectionError,
  MongoWriteConcernError,
  TopologyDescription,
  TopologyType,
} from 'mongodb';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { toWorkqError } from '../src/stores/mongodb/errors.ts';
import { createMongoStore, type MongoStoreOptions } from '../src/stores/mongodb/index.ts';
import { rejection } from './support/fixtures.ts';
import { ManualClock } from './support/manual-clock.ts';
import { withWireStore } from './support/wire-store.ts';

// The MongoDB store through a failover: a primary that steps down or goes
// away while calls are on their way, and the election of the next one.

const wire = await startMongoWireDouble();
const opened: Store[] = [];
let databases = 0;
afterEach(async () => {
  wire.configureFailPoint('failCommand', 'off');
  wire.configureFailPoint('onPrimaryTransactionalWrite', 'off');
  await Promise.all(opened.splice(0).map((store) => store.close()));
});
afterAll(() => wire.close());

/** The session a command was sent in (its `lsid`), as a string. */
const sessionOf = (command: RecordedCommand) => String(command.body.lsid?.id?.toString('hex'));
/** The sessions of the commands sent to `dbName`. */
const sessionsOf = (dbName: string) => new Set(wire.commands.filter((command) => command.db === dbName).map(sessionOf));

/** A store on its own database of the wire double, with an engine on a manual clock. */
async function openOnWire(options: Partial<MongoStoreOptions> = {}) {
  const dbName = `workq_failover_${++databases}`;
  const store = await createMongoStore({ url: wire.url, dbName, notify: false, ...options });
  opened.push(store);
  return { dbName, store, engine: createEngine({ store, clock: new ManualClock(), leaseSweepIntervalMs: 0 }) };
}
const jobs = (n: number, name: string) => Array.from({ length: n }, (_, i) => ({ name, version: 1, payload: { i } }));

/** The server's codes of a primary that stepped down, is shutting down or is not the primary. */
const STEP_DOWN = {
  NotWritablePrimary: 10107,
  NotPrimaryNoSecondaryOk: 13435,
  NotPrimaryOrSecondary: 13436,
  PrimarySteppedDown: 189,
  ShutdownInProgress: 91,
  InterruptedAtShutdown: 11600,
  InterruptedDueToReplStateChange: 11602,
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe('mongodb store through a failover', () => {
  it('waits longer than an unplanned election (10 to 12 s) for a primary, by default', async () => {
    let waited: number | undefined;
    vi.spyOn(MongoClient.prototype, 'connect').mockImplementation(async function (this: MongoClient) {
      waited = this.options.serverSelectionTimeoutMS;
      throw new MongoServerSelectionError('no primary', new TopologyDescription(TopologyType.Unknown));
    });
    expect((await rejection(createMongoStore({ url: 'mongodb://127.0.0.1:9/workq' }))).code).toBe('UNAVAILABLE');
    expect(waited).toBeGreaterThan(12_000);
  });

  it('classes each step-down code on a multi-document write as retryable UNAVAILABLE, as a reply or a write concern error', () => {
    for (const [codeName, code] of Object.entries(STEP_DOWN)) {
      const reply = new MongoServerError({ message: `${codeName} on updateMany`, code, codeName });
      expect(toWorkqError(reply, 'db:27017', 'retryDead')).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
      const waited = new MongoWriteConcernError({ ok: 1, writeConcernError: { code, codeName, errmsg: codeName } });
      expect(toWorkqError(waited, 'db:27017', 'retryDead')).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    }
    const other = new MongoServerError({ message: 'BadValue', code: 2, codeName: 'BadValue' });
    expect(toWorkqError(other, 'db:27017', 'retryDead').retryable).toBe(false);
  });

  it('a retry of dead jobs cut off by a step-down fails retryable, and the same call succeeds after the election', async () => {
    const { engine } = await openOnWire();
    await engine.enqueue({ name: 'sd.a', version: 1, payload: {}, options: { maxAttempts: 1 } });
    const [job] = await engine.claim({ name: 'sd.a', maxVersion: 1, limit: 1, workerId: 'w' });
    await engine.fail(job!, { message: 'boom' });
    const code = STEP_DOWN.InterruptedDueToReplStateChange;
    wire.configureFailPoint('failCommand', { times: 1 }, { failCommands: ['update'], errorCode: code });
    const error = await rejection(engine.retryDead({ name: 'sd.a' }));
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    expect(error.message).not.toContain('failpoint');
    expect(await engine.retryDead({ name: 'sd.a' })).toBe(1);
  });

  it('a claim that cannot answer gives its jobs back through a failover, though the first give-back is cut off too', async () => {
    const { dbName, engine, store } = await openOnWire();
    const enqueued = await engine.enqueueMany(jobs(3, 'gb.a'));
    const from = wire.commands.length;
    // The lease write is applied and its connection cut; its retry is cut off (the primary is gone), then the
    // first give-back too, before either runs.
    wire.configureFailPoint('onPrimaryTransactionalWrite', { times: 1 }, { closeConnection: true });
    failCommandAfter(wire, 1, 2, { failCommands: ['update'], closeConnection: true });
    const error = await rejection(engine.claim({ name: 'gb.a', maxVersion: 1, limit: 3, workerId: 'w' }));
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    const updates = wire.commands.slice(from).filter((command) => command.db === dbName && command.name === 'update');
    expect(updates).toHaveLength(4);
    // No sweep ran: the give-back's retry returned them, attempts unspent.
    for (const { id } of enqueued) expect(await store.getJob(id)).toMatchObject({ state: 'waiting', attempts: 0 });
  });

  it('a moveTo whose commit answer is lost is sent again for writeTimeoutMS at most, then answered from the majority state', async () => {
    const writeTimeoutMS = 2_000;
    const { dbName, engine, store } = await openOnWire({ writeTimeoutMS });
    await engine.enqueueMany(jobs(2, 'mv.a'));
    const [moved, kept] = await engine.claim({ name: 'mv.a', maxVersion: 1, limit: 2, workerId: 'w' });
    const commitsOf = (from: number) =>
      wire.commands
        .slice(from)
        .filter((command) => command.name === 'commitTransaction' && sessionsOf(dbName).has(sessionOf(command)));

    // Every commit is applied and its answer says the wait for a majority met a network timeout: the outcome
    // stays unknown however often it is sent (the driver alone would send it for 120 s).
    wire.configureFailPoint('failCommand', 'alwaysOn', {
      failCommands: ['commitTransaction'],
      writeConcernError: { code: 89, codeName: 'NetworkTimeout', errmsg: 'waiting for replication timed out' },
    });
    let from = wire.commands.length;
    let startedAt = Date.now();
    const next = await engine.moveTo(moved!, { name: 'mv.b', version: 1, payload: {} });
    expect(Date.now() - startedAt).toBeLessThan(4 * writeTimeoutMS);
    expect(next).toMatchObject({ created: true });
    expect(await store.getJob(next.id)).toMatchObject({ name: 'mv.b', movedFrom: moved!.id });
    expect(await store.getJob(moved!.id)).toMatchObject({ state: 'completed', movedTo: next.id });
    const commits = commitsOf(from);
    expect(commits.length).toBeGreaterThan(2);
    // Each commit is bounded by writeTimeoutMS: its write concern waits longer, so the driver's 10 s wtimeout
    // default never applies and a commit that runs out ends with MaxTimeMSExpired, which is not sent again.
    expect(commits[0]?.body.maxTimeMS).toBe(writeTimeoutMS);
    expect(commits[0]?.body.writeConcern?.wtimeout).toBeGreaterThan(writeTimeoutMS);

    // No commit reaches the primary (each connection closes first): the move is reported failed, and the
    // lease still holds.
    wire.configureFailPoint('failCommand', 'alwaysOn', { failCommands: ['commitTransaction'], closeConnection: true });
    from = wire.commands.length;
    startedAt = Date.now();
    const error = await rejection(engine.moveTo(kept!, { name: 'mv.b', version: 1, payload: {} }));
    expect(Date.now() - startedAt).toBeLessThan(4 * writeTimeoutMS);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    expect(commitsOf(from).length).toBeGreaterThan(2);
    wire.configureFailPoint('failCommand', 'off');
    expect(await store.getJob(kept!.id)).toMatchObject({ state: 'active' });
  });
});

describe('mongodb store through an election, under the real driver (wire double)', () => {
  it('a multi-document write refused by the stepping-down primary is retryable, and a claim waits out a 4 s election', async () => {
    const dbName = 'workq_failover';
    await withWireStore(dbName, async (primary, store) => {
      const engine = createEngine({ store, leaseSweepIntervalMs: 0 });
      await engine.enqueue({ name: 'el.a', version: 1, payload: {} });
      const election = primary.stepDown(4_000);
      // updateMany is not a retryable write: the driver hands the server's NotWritablePrimary (10107) back.
      const error = await rejection(engine.retryDead({ name: 'el.a' }));
      expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
      // A claim sent during the election waits for the new primary, longer than the old 3 s selection timeout.
      const [claimed] = await engine.claim({ name: 'el.a', maxVersion: 1, limit: 1, workerId: 'w' });
      expect(claimed?.attempt).toBe(1);
      await election;
    });
  }, 20_000);
});
