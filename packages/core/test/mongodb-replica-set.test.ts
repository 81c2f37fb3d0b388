import { describe, expect, it } from 'vitest';
import { storesOnDouble } from './support/mongodb-on-double.ts';

// The MongoDB store on the driver double set up as a replica set's member,
// for what a replica set does that a single server does not: secondaries
// behind the primary, failovers that cut a write off, a majority that cannot
// acknowledge, claims racing each other.

const openOnDouble = storesOnDouble();
const replicaSet = { replicaSet: 'rs0' };

describe('mongodb store on a replica set: reads', () => {
  it('reads its own writes through a client that prefers secondaries: every read goes to the primary', async () => {
    const lagging = { ...replicaSet, readPreference: 'secondaryPreferred', laggingSecondary: true };
    const { double, engine, store } = await openOnDouble({}, lagging);
    const { id } = await engine.enqueue({ name: 'rp.a', version: 1, payload: {} });
    const [job] = await engine.claim({ name: 'rp.a', maxVersion: 1, limit: 1, workerId: 'w' });
    expect(job?.id).toBe(id);
    const keyed = { name: 'rp.b', version: 1, payload: {}, options: { idempotencyKey: 'k' } };
    const first = await engine.enqueue(keyed);
    expect(await engine.enqueue(keyed)).toMatchObject({ id: first.id, created: false });
    expect((await store.getJob(id))?.state).toBe('active');
    expect(new Set(double.queries.map((query) => query.readPreference))).toEqual(new Set(['primary']));
  });
});
