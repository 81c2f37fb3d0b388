import { expect, it } from 'vitest';
import type { Engine, EnqueueInput } from '../../src/engine/engine.ts';
import type { Store } from '../../src/engine/store.ts';
import { isWorkqError } from '../../src/errors.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';

export const CONCURRENT = 200;
const CLIENTS = 8;

/**
 * What the deduplication tests share: engines on `CLIENTS` client stores of their own (one set for every race
 * here: each store holds a pool of connections until the suite ends), and an enqueue input of version 1.
 */
export function deduplicationHelpers(ctx: SuiteContext) {
  let clients: Promise<Store[]> | undefined;
  const clientEngines = async (clock: ManualClock) => {
    clients ??= ctx.clientStores(CLIENTS);
    return (await clients).map((store) => ctx.engine({ store, clock }).engine);
  };
  const job = (name: string, payload: unknown, options: EnqueueInput['options']): EnqueueInput => ({
    name,
    version: 1,
    payload,
    ...(options ? { options } : {}),
  });
  /**
   * `CONCURRENT` enqueues of `name` with `options` (idempotency key `race`), spread over `engines`, once the
   * job `oldId` let go of the key: exactly one new job is made and takes the key, which `oldId` no longer holds.
   */
  const expectOneTakesOver = async (
    engines: Engine[],
    name: string,
    options: EnqueueInput['options'],
    oldId: string,
  ) => {
    const results = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, n) => engines[n % CLIENTS]!.enqueue(job(name, { n }, options))),
    );
    const ids = new Set(results.map((r) => r.id));
    expect(ids.size).toBe(1);
    expect(ids.has(oldId)).toBe(false);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const jobs = await engines[0]!.store.listJobs({ name, limit: 10 });
    expect(jobs.map((j) => [j.id, j.idempotencyKey]).sort()).toEqual(
      [
        [oldId, null],
        [[...ids][0], 'race'],
      ].sort(),
    );
  };
  return { clientEngines, job, expectOneTakesOver };
}

/**
 * Deduplication beyond keys held while their job is retained: idempotency keys that hold only
 * `idempotencyTtlMs` (throttling), and
 * `debounce`, which keeps one waiting job per key, with the latest payload, due `delayMs` after the latest
 * enqueue. Both hold under concurrent enqueues from separate connections.
 */
export function registerDeduplicationTests(ctx: SuiteContext): void {
  const { clientEngines, job, expectOneTakesOver } = deduplicationHelpers(ctx);

  it('an idempotency key with a TTL holds for the TTL, then the next enqueue makes a new job that takes the key over', async () => {
    const name = ctx.jobName('ttl');
    const { engine, store, clock } = ctx.engine();
    const options = { idempotencyKey: 'k', idempotencyTtlMs: 1000 };
    const first = await engine.enqueue(job(name, { n: 1 }, options));
    expect(first.created).toBe(true);
    expect(await engine.get(first.id)).toMatchObject({
      idempotencyKey: 'k',
      idempotencyExpiresAt: new Date(clock.now().getTime() + 1000),
    });
    clock.advance(999);
    expect(await engine.enqueue(job(name, { n: 2 }, options))).toEqual({
      id: first.id,
      created: false,
      state: 'ready',
    });

    clock.advance(1);
    const second = await engine.enqueue(job(name, { n: 3 }, options));
    expect(second.created).toBe(true);
    expect(second.id).not.toBe(first.id);
    // The first job is still retained, unchanged but for the key it gave up.
    expect(await store.getJob(first.id)).toMatchObject({ state: 'waiting', payload: { n: 1 }, idempotencyKey: null });
    expect(await store.getJob(second.id)).toMatchObject({ payload: { n: 3 }, idempotencyKey: 'k' });
    expect(await engine.enqueue(job(name, { n: 4 }, options))).toMatchObject({ id: second.id, created: false });
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(2);
  });

  it('a key without a TTL holds while its job is retained; a TTL is the holder’s, whatever a later enqueue asks', async () => {
    const name = ctx.jobName('ttl-holder');
    const { engine, clock } = ctx.engine();
    const kept = await engine.enqueue(job(name, { n: 1 }, { idempotencyKey: 'kept' }));
    clock.advance(86_400_000);
    const again = await engine.enqueue(job(name, { n: 2 }, { idempotencyKey: 'kept', idempotencyTtlMs: 1 }));
    expect(again).toMatchObject({ id: kept.id, created: false });

    const throttled = await engine.enqueue(job(name, { n: 3 }, { idempotencyKey: 'ttl', idempotencyTtlMs: 50 }));
    clock.advance(50);
    const plain = await engine.enqueue(job(name, { n: 4 }, { idempotencyKey: 'ttl' }));
    expect(plain.created).toBe(true);
    expect(plain.id).not.toBe(throttled.id);
    clock.advance(86_400_000);
    expect(await engine.enqueue(job(name, { n: 5 }, { idempotencyKey: 'ttl' }))).toMatchObject({
      id: plain.id,
      created: false,
    });
  });

  it(`${CONCURRENT} concurrent enqueues with a key whose TTL ran out make exactly one new job`, async () => {
    const name = ctx.jobName('ttl-race');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const options = { idempotencyKey: 'race', idempotencyTtlMs: 1000 };
    const old = await engines[0]!.enqueue(job(name, { n: -1 }, options));
    clock.advance(1000);
    await expectOneTakesOver(engines, name, options, old.id);
  });

  it('a debounce makes a job delayMs ahead; while it waits, each debounce replaces its payload and pushes its run time', async () => {
    const name = ctx.jobName('debounce');
    const { engine, store, clock } = ctx.engine();
    const debounce = { key: 'user-7', delayMs: 1000 };
    const start = clock.now().getTime();
    const first = await engine.enqueue(job(name, { n: 1 }, { debounce }));
    expect(first).toMatchObject({ created: true, state: 'scheduled' });
    expect(await engine.get(first.id)).toMatchObject({ runAt: new Date(start + 1000), debounceKey: 'user-7' });

    clock.advance(600);
    const second = await engine.enqueue(job(name, { n: 2 }, { debounce, priority: 4 }));
    expect(second).toEqual({ id: first.id, created: false, state: 'scheduled' });
    expect(await store.getJob(first.id)).toMatchObject({
      payload: { n: 2 },
      priority: 4,
      runAt: new Date(start + 1600),
      updatedAt: new Date(start + 600),
      createdAt: new Date(start),
    });
    clock.advance(999);
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' })).toEqual([]);
    clock.advance(1);
    const claimed = await claimOne(engine, name);
    expect(claimed).toMatchObject({ id: first.id, payload: { n: 2 } });
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(1);
  });

  it('a debounce that finds its job started (running, or waiting for a retry) or finished makes a new one, and leaves that job as it was', async () => {
    const name = ctx.jobName('debounce-started');
    const { engine, store, clock } = ctx.engine();
    const options = (delayMs: number) => ({
      debounce: { key: 'k', delayMs },
      backoff: { type: 'fixed', delayMs: 60_000 } as const,
    });
    const first = await engine.enqueue(job(name, { n: 1 }, options(0)));
    const running = await claimOne(engine, name);
    clock.advance(10);
    const second = await engine.enqueue(job(name, { n: 2 }, options(500)));
    expect(second).toMatchObject({ created: true, state: 'scheduled' });
    expect(second.id).not.toBe(first.id);
    expect(await store.getJob(first.id)).toMatchObject({ state: 'active', payload: { n: 1 }, debounceKey: null });
    expect(await store.getJob(second.id)).toMatchObject({ payload: { n: 2 }, debounceKey: 'k' });
    await engine.fail(running, { message: 'again' });
    expect(await engine.enqueue(job(name, { n: 3 }, options(500)))).toMatchObject({ id: second.id, created: false });

    // Started, failed, and waiting for its retry while still holding the key: it takes no debounce any more.
    clock.advance(500);
    await engine.fail(await claimOne(engine, name), { message: 'again' });
    const third = await engine.enqueue(job(name, { n: 4 }, options(0)));
    expect(third).toMatchObject({ created: true, state: 'ready' });
    expect(await store.getJob(second.id)).toMatchObject({ state: 'waiting', payload: { n: 3 }, debounceKey: null });

    await engine.complete(await claimOne(engine, name), null);
    const fourth = await engine.enqueue(job(name, { n: 5 }, options(0)));
    expect(fourth.created).toBe(true);
    expect(new Set([first.id, second.id, third.id, fourth.id]).size).toBe(4);
    expect((await store.listJobs({ name, limit: 10 })).map((j) => j.debounceKey).filter(Boolean)).toEqual(['k']);
  });

  it('a debounce moves a ready job back to scheduled, and the same key of another job type is another job', async () => {
    const name = ctx.jobName('debounce-later');
    const other = ctx.jobName('debounce-other');
    const { engine } = ctx.engine();
    const ready = await engine.enqueue(job(name, { n: 1 }, { debounce: { key: 'k', delayMs: 0 } }));
    expect(ready.state).toBe('ready');
    const later = await engine.enqueue(job(name, { n: 2 }, { debounce: { key: 'k', delayMs: 5000 } }));
    expect(later).toEqual({ id: ready.id, created: false, state: 'scheduled' });
    expect(await engine.claim({ name, maxVersion: 1, limit: 5, workerId: 'w1' })).toEqual([]);
    const elsewhere = await engine.enqueue(job(other, { n: 3 }, { debounce: { key: 'k', delayMs: 0 } }));
    expect(elsewhere.created).toBe(true);
    expect((await claimOne(engine, other)).payload).toEqual({ n: 3 });
  });

  it(`${CONCURRENT} concurrent debounces of one key on separate connections leave one waiting job with one of their payloads`, async () => {
    const name = ctx.jobName('debounce-race');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const debounce = { key: 'race', delayMs: 60_000 };
    const results = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, n) => engines[n % CLIENTS]!.enqueue(job(name, { n }, { debounce }))),
    );
    const ids = new Set(results.map((r) => r.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const jobs = await engines[0]!.store.listJobs({ name, limit: 10 });
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ state: 'waiting', debounceKey: 'race' });
    const { n } = jobs[0]!.payload as { n: number };
    expect(n >= 0 && n < CONCURRENT).toBe(true);
    // The last writer wins: an enqueue after all of them replaces whichever landed last.
    await engines[3]!.enqueue(job(name, { n: 'last' }, { debounce }));
    expect((await engines[0]!.store.getJob([...ids][0]!))?.payload).toEqual({ n: 'last' });
  });

  it('debounces racing claims on separate connections: a claimed job carries a payload sent to it, and at most one job waits', async () => {
    const name = ctx.jobName('debounce-claims');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const debounce = { key: 'busy', delayMs: 0 };
    const claimed: { id: string; payload: unknown }[] = [];
    let enqueuing = true;
    const claimers = engines.slice(0, 2).map(async (engine, w) => {
      while (enqueuing) {
        const jobs = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: `w${w}` });
        claimed.push(...jobs.map(({ id, payload }) => ({ id, payload })));
        if (jobs.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
    });
    // A debounce whose waiting job keeps being started under it fails retryably, and is sent again, as a client would.
    const enqueueRetrying = async (engine: Engine, input: EnqueueInput) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await engine.enqueue(input);
        } catch (error) {
          if (!isWorkqError(error, 'UNAVAILABLE') || !error.retryable || attempt >= 20) throw error;
        }
      }
    };
    let results: Awaited<ReturnType<typeof enqueueRetrying>>[];
    try {
      results = await Promise.all(
        Array.from({ length: 100 }, (_, n) => enqueueRetrying(engines[n % CLIENTS]!, job(name, { n }, { debounce }))),
      );
    } finally {
      // The claimers stop even when an enqueue fails: left running, they would claim on after the test.
      enqueuing = false;
      await Promise.all(claimers);
    }
    const sentTo = new Map<number, string>(results.map((r, n) => [n, r.id]));
    for (const { id, payload } of claimed) expect(sentTo.get((payload as { n: number }).n)).toBe(id);
    const waiting = await engines[0]!.store.listJobs({ name, states: ['waiting'], limit: 10 });
    expect(waiting.length).toBeLessThanOrEqual(1);
    const all = await engines[0]!.store.listJobs({ name, limit: 1000 });
    expect(all).toHaveLength(claimed.length + waiting.length);
    expect(new Set(results.map((r) => r.id))).toEqual(new Set(all.map((j) => j.id)));
  });

  it('enqueueMany: debounces of one key are one job with the last payload; the first reports it created', async () => {
    const name = ctx.jobName('debounce-batch');
    const { engine, store } = ctx.engine();
    const debounce = { key: 'b', delayMs: 100 };
    const results = await engine.enqueueMany([
      job(name, { n: 1 }, { debounce }),
      job(name, { n: 2 }, undefined),
      job(name, { n: 3 }, { debounce }),
      job(name, { n: 4 }, { debounce: { key: 'c', delayMs: 100 } }),
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, false, true]);
    expect(results[2]!.id).toBe(results[0]!.id);
    expect(new Set(results.map((r) => r.id)).size).toBe(3);
    expect((await store.getJob(results[0]!.id))?.payload).toEqual({ n: 3 });
    expect((await store.getJob(results[3]!.id))?.payload).toEqual({ n: 4 });
    const again = await engine.enqueueMany([job(name, { n: 5 }, { debounce })]);
    expect(again).toEqual([{ id: results[0]!.id, created: false, state: 'scheduled' }]);
  });

  it('a debounce enqueued for a waiting claim is not handed to it: it runs delayMs later', async () => {
    const name = ctx.jobName('debounce-handoff');
    const { engine } = ctx.engine();
    const waiting = { name, minVersion: 1, maxVersion: 1, limit: 1, workerId: 'waiting' };
    const handed = await engine.enqueueForClaim(job(name, { n: 1 }, { debounce: { key: 'h', delayMs: 100 } }), waiting);
    expect(handed).toMatchObject({ result: { created: true, state: 'scheduled' }, claimed: null });
  });

  it('contradicting or bad deduplication options are VALIDATION errors, and nothing is stored', async () => {
    const name = ctx.jobName('dedup-invalid');
    const { engine, store } = ctx.engine();
    const debounce = { key: 'k', delayMs: 10 };
    for (const options of [
      { debounce, idempotencyKey: 'k' },
      { debounce, idempotencyTtlMs: 10 },
      { debounce, delayMs: 10 },
      { debounce, runAt: new Date() },
      { idempotencyTtlMs: 1000 },
      { idempotencyKey: 'k', idempotencyTtlMs: 0 },
      { idempotencyKey: 'k', idempotencyTtlMs: 1.5 },
      { debounce: { key: '', delayMs: 10 } },
      { debounce: { key: 'k', delayMs: -1 } },
    ]) {
      await expectWorkqError(engine.enqueue(job(name, { n: 1 }, options)), 'VALIDATION');
    }
    await expectWorkqError(
      engine.enqueueMany([{ ...job(name, { n: 1 }, { debounce }), idempotencyKey: 'own' }]),
      'VALIDATION',
    );
    const withOwnKey = await engine.enqueueMany([
      { ...job(name, { n: 1 }, { idempotencyTtlMs: 1000 }), idempotencyKey: 'own' },
    ]);
    expect(withOwnKey[0]?.created).toBe(true);
    expect(await store.listJobs({ name, limit: 10 })).toHaveLength(1);

    const from = ctx.jobName('dedup-move');
    await engine.enqueue(job(from, {}, undefined));
    const lease = await claimOne(engine, from);
    await expectWorkqError(engine.moveTo(lease, job(name, { n: 2 }, { debounce })), 'VALIDATION');
    await expectWorkqError(
      engine.moveTo(lease, job(name, { n: 2 }, { idempotencyKey: 'm', idempotencyTtlMs: 5 })),
      'VALIDATION',
    );
    await engine.complete(lease);
  });
}
