import type { Doc } from '@workq/test-support';
import { describe, expect, it } from 'vitest';
import { DB, storesOnDouble } from './support/mongodb-on-double.ts';

// The work one call of the MongoDB store may do: sweeps, promotions and acks
// in bounded batches, whatever the backlog.

const openOnDouble = storesOnDouble();
const replicaSet = { replicaSet: 'rs0' };
const jobs = (n: number, name: string, leaseMs = 30_000) =>
  Array.from({ length: n }, (_, i) => ({ name, version: 1, payload: { i }, options: { leaseMs } }));

describe('mongodb store: bounded work', () => {
  it('sweeps a mass worker loss in batches of bounded id lists, each update naming its job type', async () => {
    const { double, engine, store, clock } = await openOnDouble({}, replicaSet);
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
    double.queries.length = 0;
    const swept = await store.requeueExpiredLeases(now, { message: 'lost', code: 'LEASE_EXPIRED', at: now });
    expect(swept).toHaveLength(1_250);
    const sweepWrites = double.queries.filter((query) => query.method === 'bulkWrite');
    expect(sweepWrites.length).toBeGreaterThan(0);
    for (const write of sweepWrites) {
      expect(typeof write.filter.name).toBe('string');
      expect(((write.filter._id as Doc).$in as unknown[]).length).toBeLessThanOrEqual(1_000);
    }
    const reads = double.queries.filter((query) => query.method === 'find' && query.filter.state === 'active');
    expect(reads.every((read) => read.limit !== undefined && read.limit <= 1_000)).toBe(true);
  });

  it('moves due delayed jobs into the claim index in bounded batches, once for a store’s concurrent claims', async () => {
    const { double, engine, clock } = await openOnDouble({}, replicaSet);
    for (let done = 0; done < 1_200; done += 400) {
      const delayed = jobs(400, 'due.a').map((job) => ({ ...job, options: { ...job.options, delayMs: 1_000 } }));
      await engine.enqueueMany(delayed);
    }
    clock.advance(1_000);
    double.queries.length = 0;
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) => engine.claim({ name: 'due.a', maxVersion: 1, limit: 1, workerId: `w${i}` })),
    );
    expect(claims.flat()).toHaveLength(8);
    const promotions = double.queries.filter((query) => query.method === 'updateMany');
    expect(promotions.map((promotion) => ((promotion.filter._id as Doc).$in as unknown[]).length)).toEqual([
      1_000, 200,
    ]);
    for (const promotion of promotions) expect(promotion.filter.name).toBe('due.a');
    const waiting = double.collection(DB, 'workq_jobs')!.match({ name: 'due.a', state: 'waiting' });
    expect(waiting).toHaveLength(1_200 - 8);
  });
});
