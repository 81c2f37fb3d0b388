import { startMongoWireDouble } from '@workq/test-support';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import { createMongoStore } from '../src/stores/mongodb/index.ts';
import { CLAIM_INDEX, DELAYED_INDEX, LEASE_INDEX, PARENTS_WAITING_INDEX } from '../src/stores/mongodb/indexes.ts';
import { ManualClock } from './support/manual-clock.ts';

// The MongoDB store's job counts under the real driver, against a fake primary that speaks the wire
// protocol, with what each query costs recorded by the double's planner (`costQueries`).

const wire = await startMongoWireDouble();
const store = await createMongoStore({ url: wire.url, dbName: 'workq_counts', notify: false });
const clock = new ManualClock();
const engine = createEngine({ store, clock, leaseSweepIntervalMs: 0 });
afterAll(async () => {
  await engine.close();
  await store.close();
  await wire.close();
});

describe('mongodb store: job counts', () => {
  it('the live count (what metrics read at every scrape) reads the partial indexes only: no finished job', async () => {
    const name = 'count.a';
    const payloads = (n: number) => Array.from({ length: n }, (_, i) => ({ name, version: 1, payload: { i } }));
    const enqueued = await engine.enqueueMany(payloads(40));
    const claimed = await engine.claim({ name, maxVersion: 1, limit: 30, workerId: 'w' });
    for (const job of claimed) await engine.complete({ id: job.id, leaseToken: job.leaseToken });
    for (const { id } of enqueued.slice(30, 33)) await engine.cancel(id);
    await engine.enqueueMany(payloads(2).map((job) => ({ ...job, options: { delayMs: 60_000 } })));
    await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w' });
    const live = [
      { name, version: 1, state: 'scheduled', count: 2 },
      { name, version: 1, state: 'ready', count: 6 },
      { name, version: 1, state: 'active', count: 1 },
    ];

    wire.state.costQueries = true;
    const from = wire.commands.length;
    try {
      expect(await engine.counts('live')).toEqual(live);
    } finally {
      wire.state.costQueries = false;
    }
    const queries = wire.commands.slice(from).flatMap((command) => command.queries);
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) {
      expect([CLAIM_INDEX, DELAYED_INDEX, PARENTS_WAITING_INDEX, LEASE_INDEX]).toContain(query.plan?.index);
    }
    // Index entries read: the 9 live jobs, none of the 33 finished.
    expect(queries.reduce((sum, query) => sum + (query.plan?.examined ?? Number.POSITIVE_INFINITY), 0)).toBe(9);

    expect(await engine.counts()).toEqual([
      ...live,
      { name, version: 1, state: 'completed', count: 30 },
      { name, version: 1, state: 'cancelled', count: 3 },
    ]);
  });
});
