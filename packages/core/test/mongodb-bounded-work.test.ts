import { startMongoWireDouble } from '@workq/test-support';
import { MongoClient } from 'mongodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { MAX_GROUP_TURNS } from '../src/stores/mongodb/group-turns.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { MAX_STORED_RESULT_BYTES } from '../src/stores/mongodb/oversized-results.ts';
import { rejection } from './support/fixtures.ts';
import { ManualClock } from './support/manual-clock.ts';

/** A group's last turn as the store keeps it (its `_id` is the type and group). */
interface GroupTurn {
  _id: string;
  name: string;
  group: string;
  lastTurn: number;
}

// The MongoDB store's leases on the database's clock, and the work one call
// may do: sweeps and acks in bounded batches, whatever the backlog. Under
// the real driver, against a fake primary that speaks the wire protocol:
// each store has a database of its own, and what it sent is read off the
// commands the primary received.

const wire = await startMongoWireDouble();
const client = new MongoClient(wire.url);
const opened: Store[] = [];
let databases = 0;
afterEach(async () => {
  wire.state.clockOffsetMs = 0;
  await Promise.all(opened.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await client.close();
  await wire.close();
});

/** A store on its own database of the wire double, with an engine on a manual clock. */
async function openOnWire(dbName = `workq_bounded_${++databases}`) {
  const store = await createMongoStore({ url: wire.url, dbName, notify: false });
  opened.push(store);
  const clock = new ManualClock();
  return { dbName, store, clock, engine: createEngine({ store, clock, leaseSweepIntervalMs: 0 }) };
}

/** The commands sent to `dbName`'s jobs from the `from`th on. */
const jobsCommands = (dbName: string, from: number) =>
  wire.commands
    .slice(from)
    .filter((command) => command.db === dbName && Object.values(command.body)[0] === 'workq_jobs');

/** The statements of an `update` command: each one's filter, and whether it may change many documents. */
const updatesOf = (command: { body: { updates?: { q: Record<string, unknown>; multi?: boolean }[] } }) =>
  command.body.updates ?? [];

const jobs = (n: number, name: string, leaseMs = 30_000) =>
  Array.from({ length: n }, (_, i) => ({ name, version: 1, payload: { i }, options: { leaseMs } }));

describe('mongodb store: leases on the database clock', () => {
  it('a server whose clock runs a minute ahead sweeps no live lease, and sweeps it once the database says it expired', async () => {
    const { dbName, engine, clock } = await openOnWire();
    const { id } = await engine.enqueue(jobs(1, 'skew.a')[0]!);
    const [claimed] = await engine.claim({ name: 'skew.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(claimed?.id).toBe(id);
    // Another server, sharing the database, whose clock is a minute ahead of the primary's.
    wire.state.clockOffsetMs = -60_000;
    const { engine: aheadEngine, clock: aheadClock } = await openOnWire(dbName);
    aheadClock.set(new Date(clock.now().getTime() + 60_000));
    expect(await aheadEngine.sweepExpiredLeases()).toEqual({ requeued: 0, dead: 0 });
    expect(await aheadEngine.claim({ name: 'skew.a', maxVersion: 1, limit: 1, workerId: 'w2' })).toEqual([]);
    expect((await engine.get(id)).state).toBe('active');
    // Past the deadline by more than the offset's measurement error (half a round trip to the primary).
    aheadClock.advance(31_000);
    expect(await aheadEngine.sweepExpiredLeases()).toEqual({ requeued: 1, dead: 0 });
  });
});

describe('mongodb store: bounded work', () => {
  it('sweeps a mass worker loss in batches of bounded id lists, each update naming its job type', async () => {
    const { dbName, engine, store, clock } = await openOnWire();
    // Workers lost holding 1,250 leases of two types.
    for (const [name, n] of [
      ['mass.a', 1_100],
      ['mass.b', 150],
    ] as const) {
      for (let done = 0; done < n; done += 100) {
        await engine.enqueueMany(jobs(Math.min(100, n - done), name, 1_000));
        await engine.claim({ name, maxVersion: 1, limit: 100, workerId: 'lost' });
      }
    }
    const now = clock.advance(1_000);
    const from = wire.commands.length;
    const swept = await store.requeueExpiredLeases(now, { message: 'lost', code: 'LEASE_EXPIRED', at: now });
    expect(swept).toHaveLength(1_250);
    const sent = jobsCommands(dbName, from);
    const sweepWrites = sent.filter((command) => command.name === 'update').flatMap(updatesOf);
    expect(sweepWrites.length).toBeGreaterThan(0);
    for (const write of sweepWrites) {
      expect(typeof write.q.name).toBe('string');
      expect((write.q._id as { $in: unknown[] }).$in.length).toBeLessThanOrEqual(1_000);
    }
    const reads = sent.filter((command) => command.name === 'find' && command.body.filter?.state === 'active');
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((read) => read.body.limit !== undefined && read.body.limit <= 1_000)).toBe(true);
  });

  it('acks a batch of 300 as one bulk write, and names only the jobs their leases held', async () => {
    const { dbName, engine, store, clock } = await openOnWire();
    await engine.enqueueMany(jobs(300, 'ack.a'));
    const claimed = await engine.claim({ name: 'ack.a', maxVersion: 1, limit: 300, workerId: 'w' });
    const [first, ...rest] = claimed;
    const from = wire.commands.length;
    const stale = { id: first!.id, leaseToken: 'not-the-token@ack.a', result: null };
    const acks = [stale, ...rest.map((job) => ({ id: job.id, leaseToken: job.leaseToken, result: { ok: true } }))];
    const completed = await store.completeJobs(acks, clock.now());
    expect(completed.sort()).toEqual(rest.map((job) => job.id).sort());
    const writes = jobsCommands(dbName, from).filter((command) =>
      ['insert', 'update', 'delete'].includes(command.name),
    );
    expect(writes.map((write) => [write.name, updatesOf(write).length])).toEqual([['update', 300]]);
    expect((await engine.get(first!.id)).state).toBe('active');
  });

  it('moves due delayed jobs into the claim index in bounded batches, once for a store’s concurrent claims', async () => {
    const { dbName, engine, clock } = await openOnWire();
    for (let done = 0; done < 1_200; done += 400) {
      const delayed = jobs(400, 'due.a').map((job) => ({ ...job, options: { ...job.options, delayMs: 1_000 } }));
      await engine.enqueueMany(delayed);
    }
    clock.advance(1_000);
    const from = wire.commands.length;
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) => engine.claim({ name: 'due.a', maxVersion: 1, limit: 1, workerId: `w${i}` })),
    );
    expect(claims.flat()).toHaveLength(8);
    const updates = jobsCommands(dbName, from).filter((command) => command.name === 'update');
    const promotions = updates.flatMap(updatesOf).filter((update) => update.multi === true);
    expect(promotions.map((promotion) => (promotion.q._id as { $in: unknown[] }).$in.length)).toEqual([1_000, 200]);
    for (const promotion of promotions) expect(promotion.q.name).toBe('due.a');
    const waiting = await client
      .db(dbName)
      .collection('workq_jobs')
      .countDocuments({ name: 'due.a', state: 'waiting' });
    expect(waiting).toBe(1_200 - 8);
  });

  it('ends a job whose result is over what a job document holds dead with PAYLOAD_TOO_LARGE, instead of failing its ack forever', async () => {
    const { engine, store, clock } = await openOnWire();
    await engine.enqueueMany(jobs(2, 'big.a'));
    const [big, small] = await engine.claim({ name: 'big.a', maxVersion: 1, limit: 2, workerId: 'w' });
    const huge = { text: 'x'.repeat(MAX_STORED_RESULT_BYTES) };
    const acks = [
      { id: big!.id, leaseToken: big!.leaseToken, result: huge },
      { id: small!.id, leaseToken: small!.leaseToken, result: { ok: true } },
    ];
    const error = await rejection(store.completeJobs(acks, clock.now()));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.message).toContain(big!.id);
    const dead = await store.getJob(big!.id);
    expect(dead).toMatchObject({ state: 'dead', result: null });
    expect(dead?.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', permanent: true, attempt: 1 });
    // Nothing else of the batch was applied: its other ack, sent again, completes.
    expect((await engine.get(small!.id)).state).toBe('active');
    expect(await store.completeJobs(acks.slice(1), clock.now())).toEqual([small!.id]);
  });
});

describe('mongodb store: bounded collections', () => {
  it('keeps each type’s 10,000 most recent group turns when pruning, along their index', async () => {
    const { dbName, store } = await openOnWire();
    const turns = client.db(dbName).collection<GroupTurn>('workq_queue_groups');
    const served = Array.from({ length: MAX_GROUP_TURNS + 5 }, (_, i) => ({
      _id: `turns.a/g${i}`,
      name: 'turns.a',
      group: `g${i}`,
      lastTurn: i + 1,
    }));
    await turns.insertMany([...served, { _id: 'turns.b/g', name: 'turns.b', group: 'g', lastTurn: 1 }]);
    await store.pruneJobs(new Date(), 10, new Date());
    expect(await turns.countDocuments({ name: 'turns.a' })).toBe(MAX_GROUP_TURNS);
    expect(await turns.findOne({ name: 'turns.a' }, { sort: { lastTurn: 1 } })).toMatchObject({ lastTurn: 6 });
    expect(await turns.countDocuments({ name: 'turns.b' })).toBe(1);
    const deletes = wire.commands.filter(
      (command) => command.db === dbName && command.body.delete === 'workq_queue_groups',
    );
    expect(deletes.flatMap((command) => command.queries.map((query) => query.index))).toEqual(['turns_by_name']);
  });
});
