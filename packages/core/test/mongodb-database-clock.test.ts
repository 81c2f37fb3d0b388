import { startMongoWireDouble } from '@workq/test-support';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { ManualClock } from './support/manual-clock.ts';

// Leases swept against the primary's own clock (`$$NOW`), whatever offset a
// store measured from it: under the real driver, against a fake primary that
// speaks the wire protocol and reads `$$NOW` off its own clock.

const dbName = 'workq_database_clock';
const wire = await startMongoWireDouble({ database: dbName });
const opened: Store[] = [];
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
  await wire.close();
});

async function openStore(): Promise<Store> {
  const store = await createMongoStore({ url: wire.url, dbName, notify: false });
  opened.push(store);
  return store;
}

describe('mongodb store: sweeps on the database clock', () => {
  it("sweeps no live lease from a store whose offset from the primary is wrong, and sweeps it once the primary's clock passes its deadline", async () => {
    const holder = createEngine({ store: await openStore(), leaseSweepIntervalMs: 0 });
    const { id } = await holder.enqueue({ name: 'clock.a', version: 1, payload: {}, options: { leaseMs: 30_000 } });
    const [claimed] = await holder.claim({ name: 'clock.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(claimed?.id).toBe(id);
    // A server whose clock was stepped a minute ahead since it measured its offset (here, one whose engine
    // clock runs a minute ahead of this process's clock, which the offset is measured against).
    const stepped = createEngine({
      store: await openStore(),
      clock: new ManualClock(new Date(Date.now() + 60_000)),
      leaseSweepIntervalMs: 0,
    });
    expect(await stepped.sweepExpiredLeases()).toEqual({ requeued: 0, dead: 0 });
    // A server that measured its offset from a `hello` whose localTime read a minute ahead of the primary's
    // clock: it takes the primary to be a minute ahead of it, and moves its times a minute on.
    wire.state.localTimeErrorMs = 60_000;
    const mismeasured = createEngine({ store: await openStore(), leaseSweepIntervalMs: 0 });
    expect(await mismeasured.sweepExpiredLeases()).toEqual({ requeued: 0, dead: 0 });
    expect(await holder.get(id)).toMatchObject({ state: 'active', attempts: 1 });
    // The primary's clock passes the deadline.
    wire.state.clockOffsetMs = 31_000;
    expect(await mismeasured.sweepExpiredLeases()).toEqual({ requeued: 1, dead: 0 });
    expect(await holder.get(id)).toMatchObject({ state: 'ready', attempts: 1 });
  });
});
