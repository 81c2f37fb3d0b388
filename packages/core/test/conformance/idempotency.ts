import { expect, it } from 'vitest';
import type { Store } from '../../src/engine/store.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';

const CONCURRENT = 200;
const CLIENTS = 8;

/** Idempotency: an idempotency key used by a retained job of that type returns that job, even under concurrency. */
export function registerIdempotencyTests(ctx: SuiteContext): void {
  // One set of client stores for the racing tests: a store stays open until the suite ends, holding connections.
  let clients: Promise<Store[]> | undefined;
  const clientEngines = async (clock: ManualClock) => {
    clients ??= ctx.clientStores(CLIENTS);
    return (await clients).map((store) => ctx.engine({ store, clock }).engine);
  };

  it(`${CONCURRENT} concurrent enqueues with one idempotency key create exactly one job`, async () => {
    const name = ctx.jobName('idem-race');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const results = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, n) =>
        engines[n % CLIENTS]!.enqueue({ name, version: 1, payload: { n }, options: { idempotencyKey: 'same-key' } }),
      ),
    );
    const ids = new Set(results.map((r) => r.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect((await engines[0]!.list({ name })).jobs).toHaveLength(1);
    const [id] = ids;
    const winner = results.find((r) => r.created)!;
    expect(winner.id).toBe(id);
    expect((await engines[0]!.get(id!)).idempotencyKey).toBe('same-key');
  });

  it('concurrent enqueueMany batches over the same keys create one job per key', async () => {
    const name = ctx.jobName('idem-batches');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const keys = Array.from({ length: 20 }, (_, k) => `key-${k}`);
    const batches = await Promise.all(
      engines.map((engine, e) =>
        engine.enqueueMany(
          // each client sends the keys in its own order, so no two batches lock them alike
          keys
            .map((_, i) => keys[(i + e * 3) % keys.length]!)
            .map((key) => ({
              name,
              version: 1,
              payload: { key, e },
              options: { idempotencyKey: key },
            })),
        ),
      ),
    );
    const byKey = new Map<string, Set<string>>();
    let created = 0;
    for (const [e, batch] of batches.entries()) {
      for (const [i, result] of batch.entries()) {
        const key = keys[(i + e * 3) % keys.length]!;
        byKey.set(key, (byKey.get(key) ?? new Set()).add(result.id));
        if (result.created) created += 1;
      }
    }
    expect([...byKey.values()].every((set) => set.size === 1)).toBe(true);
    expect(created).toBe(keys.length);
    const jobs = (await engines[0]!.list({ name, limit: 1000 })).jobs;
    expect(jobs).toHaveLength(keys.length);
    expect(new Set(jobs.map((j) => j.idempotencyKey))).toEqual(new Set(keys));
  });

  it('the same key for another job type is a different job', async () => {
    const name = ctx.jobName('idem-a');
    const otherName = ctx.jobName('idem-b');
    const { engine } = ctx.engine();
    const options = { idempotencyKey: 'shared' };
    const a = await engine.enqueue({ name, version: 1, payload: { a: 1 }, options });
    const b = await engine.enqueue({ name: otherName, version: 1, payload: { b: 1 }, options });
    expect(a.created).toBe(true);
    expect(b.created).toBe(true);
    expect(b.id).not.toBe(a.id);
    expect((await engine.get(b.id)).name).toBe(otherName);
  });

  it('enqueueMany with a repeated key in one batch yields one job for it, first one wins', async () => {
    const name = ctx.jobName('idem-batch');
    const { engine, store } = ctx.engine();
    const results = await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options: { idempotencyKey: 'k1' } },
      { name, version: 1, payload: { n: 2 }, options: { idempotencyKey: 'k2' } },
      { name, version: 1, payload: { n: 3 }, options: { idempotencyKey: 'k1' } },
      { name, version: 1, payload: { n: 4 } },
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, false, true]);
    expect(results[2]!.id).toBe(results[0]!.id);
    expect(new Set(results.map((r) => r.id)).size).toBe(3);
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(3);
    expect((await store.getJob(results[0]!.id))?.payload).toEqual({ n: 1 });
  });

  it('a key still matches its job after the job finished, and does not change it', async () => {
    const name = ctx.jobName('idem-finished');
    const { engine, store } = ctx.engine();
    const first = await engine.enqueue({ name, version: 1, payload: { n: 1 }, options: { idempotencyKey: 'done' } });
    await engine.complete(await claimOne(engine, name), { r: 1 });
    const before = await store.getJob(first.id);
    const again = await engine.enqueue({ name, version: 1, payload: { n: 2 }, options: { idempotencyKey: 'done' } });
    expect(again).toEqual({ id: first.id, created: false, state: 'completed' });
    expect(await store.getJob(first.id)).toEqual(before);
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' })).toEqual([]);
  });

  it('a job enqueued for a waiting claim under a new key is handed to it where the store can; under a taken key it is the job holding that key', async () => {
    const name = ctx.jobName('idem-handoff');
    const { engine, store } = ctx.engine();
    const waiting = { name, minVersion: 1, maxVersion: 1, limit: 1, workerId: 'waiting' };
    const keyed = (n: number) => ({ name, version: 1, payload: { n }, options: { idempotencyKey: 'handed' } });
    const first = await engine.enqueueForClaim(keyed(1), waiting);
    expect(first.result.created).toBe(true);
    expect(first.claimed?.id ?? null).toBe(engine.handsOver ? first.result.id : null);
    const again = await engine.enqueueForClaim(keyed(2), waiting);
    const state = engine.handsOver ? 'active' : 'ready';
    expect(again).toEqual({ result: { id: first.result.id, created: false, state }, claimed: null });
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(1);
    expect(await store.getJob(first.result.id)).toMatchObject({ idempotencyKey: 'handed', payload: { n: 1 } });
  });

  it('moveTo under a key a retained job of the next type holds completes the job into that job, returned as an enqueue with the key returns it; nothing else changes', async () => {
    const name = ctx.jobName('idem-move-from');
    const nextName = ctx.jobName('idem-move-to');
    const { engine, store, clock } = ctx.engine();
    const keyed = (n: number) => ({
      name: nextName,
      version: 1,
      payload: { n },
      options: { idempotencyKey: 'next', delayMs: 60_000 },
    });
    const holder = await engine.enqueue(keyed(1));
    const holderBefore = await store.getJob(holder.id);
    const { id } = await engine.enqueue({ name, version: 1, payload: { step: 1 } });
    const lease = await claimOne(engine, name);
    const fromBefore = await store.getJob(id);
    const now = clock.advance(5);

    const moved = await engine.moveTo(lease, keyed(2));
    expect(moved).toEqual({ id: holder.id, created: false, state: 'scheduled' });
    expect(await engine.enqueue(keyed(3))).toEqual(moved);
    expect(await store.getJob(id)).toEqual({
      ...fromBefore,
      state: 'completed',
      movedTo: holder.id,
      leaseToken: null,
      leaseExpiresAt: null,
      finishedAt: now,
      updatedAt: now,
    });
    expect(await store.getJob(holder.id)).toEqual(holderBefore);
    expect((await store.listJobs({ name: nextName, limit: 10 })).map((job) => job.id)).toEqual([holder.id]);
    await expectWorkqError(engine.moveTo(lease, keyed(4)), 'LEASE_LOST');
  });

  it('an enqueue input’s own idempotencyKey stands in for the one in its options, which jobs of a batch share', async () => {
    const name = ctx.jobName('idem-own-key');
    const { engine } = ctx.engine();
    const options = { priority: 3, idempotencyKey: 'shared' };
    const results = await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options, idempotencyKey: 'own-1' },
      { name, version: 1, payload: { n: 2 }, options, idempotencyKey: 'own-2' },
      { name, version: 1, payload: { n: 3 }, options },
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, true]);
    const statuses = await Promise.all(results.map((r) => engine.get(r.id)));
    expect(statuses.map((status) => [status.idempotencyKey, status.priority])).toEqual([
      ['own-1', 3],
      ['own-2', 3],
      ['shared', 3],
    ]);
    const again = await engine.enqueue({ name, version: 1, payload: { n: 4 }, idempotencyKey: 'own-2' });
    expect(again).toMatchObject({ id: results[1]!.id, created: false });
  });
}
