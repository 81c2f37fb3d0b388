import { expect, it } from 'vitest';
import type { Store } from '../../src/engine/store.ts';
import { newJobId } from '../../src/job-ids.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';

const CONCURRENT = 100;
const CLIENTS = 8;

/** A UUIDv7 whose time is `ms`: what a producer whose clock says `ms` makes, or a hostile one writes. */
function idAt(ms: number, tail = '7000-8000-000000000000'): string {
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-${tail}`;
}

/**
 * Caller-chosen job ids (`EnqueueOptions.id`): an enqueue under a taken id answers the job holding it when it
 * is the same job (type, version and payload), `CONFLICT` changing nothing when it is not; exactly one job
 * per id under concurrent enqueues; an id orders a job only among jobs due in the same millisecond.
 */
export function registerJobIdTests(ctx: SuiteContext): void {
  // One set of client stores for the racing tests: a store stays open until the suite ends, holding connections.
  let clients: Promise<Store[]> | undefined;
  const clientEngines = async (clock: ManualClock) => {
    clients ??= ctx.clientStores(CLIENTS);
    return (await clients).map((store) => ctx.engine({ store, clock }).engine);
  };

  it('the same job enqueued twice under its id is one job; the second answer is that job, not created', async () => {
    const name = ctx.jobName('id-twice');
    const { engine, store } = ctx.engine();
    const id = newJobId();
    const job = { name, version: 1, payload: { n: 1, nested: { a: [1, 2] } }, options: { id } };
    const first = await engine.enqueue(job);
    expect(first).toEqual({ id, created: true, state: 'ready' });
    const before = await store.getJob(id);
    expect(await engine.enqueue(job)).toEqual({ id, created: false, state: 'ready' });
    // A UUID names the same job in upper case; the payload's key order is not part of it.
    const shuffled = { name, version: 1, payload: { nested: { a: [1, 2] }, n: 1 }, options: { id: id.toUpperCase() } };
    expect(await engine.enqueue(shuffled)).toEqual({ id, created: false, state: 'ready' });
    expect(await store.getJob(id)).toEqual(before);
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(1);
    await engine.complete(await claimOne(engine, name), { done: true });
    expect(await engine.enqueue(job)).toEqual({ id, created: false, state: 'completed' });
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' })).toEqual([]);
  });

  it('an id taken by another payload, version or type is CONFLICT, naming the id; the job holding it is unchanged and nothing is stored', async () => {
    const name = ctx.jobName('id-conflict');
    const otherName = ctx.jobName('id-conflict-other');
    const { engine, store } = ctx.engine();
    const id = newJobId();
    await engine.enqueue({ name, version: 1, payload: { n: 1 }, options: { id, priority: 2 } });
    const before = await store.getJob(id);
    const attempts = [
      { name, version: 1, payload: { n: 2 }, options: { id } },
      { name, version: 2, payload: { n: 1 }, options: { id } },
      { name: otherName, version: 1, payload: { n: 1 }, options: { id } },
    ];
    for (const attempt of attempts) {
      const error = await expectWorkqError(engine.enqueue(attempt), 'CONFLICT');
      expect(error.message).toContain(id);
      expect(error.details).toEqual({ ids: [id] });
    }
    const mixed = await expectWorkqError(
      engine.enqueueMany([{ name: otherName, version: 1, payload: { n: 9 } }, attempts[0]!]),
      'CONFLICT',
    );
    expect(mixed.message).toMatch(/1 other job\(s\) of this call were enqueued/);
    expect(await store.getJob(id)).toEqual(before);
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(1);
    // The batch's other job is enqueued on its own, as under idempotency keys: sending the batch again returns it.
    expect((await store.listJobs({ name: otherName, limit: 10 })).map((job) => job.payload)).toEqual([{ n: 9 }]);
  });

  it(`${CONCURRENT} concurrent enqueues of one id make exactly one job`, async () => {
    const name = ctx.jobName('id-race');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const id = newJobId();
    const results = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, n) =>
        engines[n % CLIENTS]!.enqueue({ name, version: 1, payload: { same: true }, options: { id } }),
      ),
    );
    expect(new Set(results.map((r) => r.id))).toEqual(new Set([id]));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect((await engines[0]!.list({ name })).jobs.map((job) => job.id)).toEqual([id]);
  });

  it('concurrent batches over the same ids, in different orders, make one job per id, without deadlocks', async () => {
    const name = ctx.jobName('id-batches');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const all: string[] = [];
    for (let round = 0; round < 10; round++) {
      const ids = Array.from({ length: 40 }, () => newJobId());
      all.push(...ids);
      const orderOf = (e: number) => ids.map((_, i) => ids[(i + e * 5) % ids.length] as string);
      const batches = await Promise.all(
        engines.map((engine, e) =>
          engine.enqueueMany(orderOf(e).map((id) => ({ name, version: 1, payload: { id }, id }))),
        ),
      );
      for (const [e, batch] of batches.entries()) expect(batch.map((r) => r.id)).toEqual(orderOf(e));
      expect(batches.flat().filter((r) => r.created)).toHaveLength(ids.length);
    }
    expect((await engines[0]!.list({ name, limit: 1000 })).jobs.map((job) => job.id).sort()).toEqual(all.sort());
  });

  it('a batch that repeats an id: the same job is one job; different jobs under one id are CONFLICT and nothing is enqueued', async () => {
    const name = ctx.jobName('id-in-batch');
    const { engine, store } = ctx.engine();
    const [a, b] = [newJobId(), newJobId()];
    const results = await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, id: b },
      { name, version: 1, payload: { n: 2 }, id: a },
      { name, version: 1, payload: { n: 1 }, id: b },
      { name, version: 1, payload: { n: 3 } },
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, false, true]);
    expect(results.slice(0, 3).map((r) => r.id)).toEqual([b, a, b]);
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(3);

    const fresh = newJobId();
    const error = await expectWorkqError(
      engine.enqueueMany([
        { name, version: 1, payload: { n: 4 } },
        { name, version: 1, payload: { n: 5 }, id: fresh },
        { name, version: 1, payload: { n: 6 }, id: fresh },
      ]),
      'CONFLICT',
    );
    expect(error.message).toMatch(/Jobs 1 and 2 of this batch have the same id.*Nothing was enqueued/);
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(3);
  });

  it('an enqueue under a key and an id it sent before is the job it made, whichever it is found by', async () => {
    const name = ctx.jobName('id-and-key');
    const { engine } = ctx.engine();
    const id = newJobId();
    const job = { name, version: 1, payload: { n: 1 }, options: { id, idempotencyKey: 'k' } };
    expect(await engine.enqueue(job)).toMatchObject({ id, created: true });
    expect(await engine.enqueue(job)).toMatchObject({ id, created: false });
    // Another id under the taken key: the key's job, as for any enqueue with that key.
    const other = { ...job, options: { id: newJobId(), idempotencyKey: 'k' } };
    expect(await engine.enqueue(other)).toMatchObject({ id, created: false });
    expect((await engine.list({ name })).jobs).toHaveLength(1);
  });

  it('a job enqueued for a waiting claim under a taken id is the job holding it, handed to no one', async () => {
    const name = ctx.jobName('id-handoff');
    const { engine, store } = ctx.engine();
    const waiting = { name, minVersion: 1, maxVersion: 1, limit: 1, workerId: 'waiting' };
    const id = newJobId();
    const job = { name, version: 1, payload: { n: 1 }, options: { id, delayMs: 60_000 } };
    const first = await engine.enqueueForClaim(job, waiting);
    expect(first).toEqual({ result: { id, created: true, state: 'scheduled' }, claimed: null });
    const ready = { name, version: 1, payload: { n: 1 }, options: { id } };
    expect(await engine.enqueueForClaim(ready, waiting)).toEqual({
      result: { id, created: false, state: 'scheduled' },
      claimed: null,
    });
    await expectWorkqError(engine.enqueueForClaim({ ...ready, payload: { n: 2 } }, waiting), 'CONFLICT');
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(1);
  });

  it('an id orders its job only among jobs due in the same millisecond: one far in the past does not jump jobs due earlier', async () => {
    const name = ctx.jobName('id-order');
    const { engine, clock } = ctx.engine();
    const t = clock.now().getTime();
    const earliest = idAt(0);
    const latest = idAt(0xffff_ffff_ffff, 'ffff-bfff-ffffffffffff');
    const early = await engine.enqueue({
      name,
      version: 1,
      payload: { n: 'due first' },
      options: { id: latest, runAt: new Date(t - 2) },
    });
    const hostile = await engine.enqueue({
      name,
      version: 1,
      payload: { n: 'hostile' },
      options: { id: earliest, runAt: new Date(t - 1) },
    });
    const tied = await engine.enqueue({
      name,
      version: 1,
      payload: { n: 'tied' },
      options: { runAt: new Date(t - 1) },
    });
    const order = await engine.claim({ name, maxVersion: 1, limit: 3, workerId: 'w1' });
    expect(order.map((job) => job.id)).toEqual([early.id, hostile.id, tied.id]);
  });

  it('ids that are not UUIDs, and an id with debounce or in moveTo, are VALIDATION; nothing is stored', async () => {
    const name = ctx.jobName('id-invalid');
    const { engine, store } = ctx.engine();
    for (const id of [
      '',
      'order-42',
      `${newJobId()}x`,
      '0190a8c4-3f2e-7c1a-9b6d-2f4e5a6b7c8g',
      42 as unknown as string,
    ]) {
      await expectWorkqError(engine.enqueue({ name, version: 1, payload: {}, options: { id } }), 'VALIDATION');
    }
    const debounced = { id: newJobId(), debounce: { key: 'd', delayMs: 1000 } };
    await expectWorkqError(engine.enqueue({ name, version: 1, payload: {}, options: debounced }), 'VALIDATION');
    await engine.enqueue({ name, version: 1, payload: { step: 1 } });
    const lease = await claimOne(engine, name);
    const next = { name, version: 1, payload: { step: 2 }, options: { id: newJobId() } };
    await expectWorkqError(engine.moveTo(lease, next), 'VALIDATION');
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(1);
  });
}
