import { expect, it } from 'vitest';
import type { EnqueueInput } from '../../src/engine/engine.ts';
import type { ChildInput } from '../../src/engine/flows.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';
import { CONCURRENT, deduplicationHelpers } from './deduplication.ts';

/**
 * Idempotency keys held until their job finishes (`idempotencyUntil: 'finished'`), whichever way it ends, and
 * the debounce modes (`replace`, `preserveRunAt`, `keepFirst`). Both hold under concurrent enqueues from
 * separate connections.
 */
export function registerDeduplicationModeTests(ctx: SuiteContext): void {
  const { clientEngines, job, expectOneTakesOver } = deduplicationHelpers(ctx);
  const untilFinished = (key: string, more: EnqueueInput['options'] = {}) => ({
    idempotencyKey: key,
    idempotencyUntil: 'finished' as const,
    ...more,
  });

  it('a key held until finished returns its job while it waits, runs or waits for a retry; once it completes, the next enqueue makes a new job', async () => {
    const name = ctx.jobName('until-finished');
    const { engine, store, clock } = ctx.engine();
    const options = untilFinished('k', { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 1000 } });
    const first = await engine.enqueue(job(name, { n: 1 }, options));
    expect(first.created).toBe(true);
    expect(await engine.get(first.id)).toMatchObject({ idempotencyKey: 'k', idempotencyUntil: 'finished' });
    expect(await engine.enqueue(job(name, { n: 2 }, options))).toEqual({
      id: first.id,
      created: false,
      state: 'ready',
    });

    const running = await claimOne(engine, name);
    expect(await engine.enqueue(job(name, { n: 3 }, options))).toMatchObject({ id: first.id, state: 'active' });
    await engine.fail(running, { message: 'again' });
    expect(await engine.enqueue(job(name, { n: 4 }, options))).toMatchObject({ id: first.id, state: 'scheduled' });

    clock.advance(1000);
    await engine.complete(await claimOne(engine, name), null);
    const second = await engine.enqueue(job(name, { n: 5 }, options));
    expect(second).toMatchObject({ created: true, state: 'ready' });
    expect(second.id).not.toBe(first.id);
    // The finished job is kept as it was, but for the key it let go of.
    expect(await store.getJob(first.id)).toMatchObject({ state: 'completed', payload: { n: 1 }, idempotencyKey: null });
    expect(await engine.get(second.id)).toMatchObject({ idempotencyKey: 'k', idempotencyUntil: 'finished' });
    expect(await engine.enqueue(job(name, { n: 6 }, options))).toMatchObject({ id: second.id, created: false });

    // The default holds the key while the job is retained, finished or not.
    const plain = ctx.jobName('until-pruned');
    const kept = await engine.enqueue(job(plain, { n: 7 }, { idempotencyKey: 'kept', idempotencyUntil: 'pruned' }));
    await engine.complete(await claimOne(engine, plain), null);
    expect((await engine.get(kept.id)).state).toBe('completed');
    expect(await engine.enqueue(job(plain, { n: 8 }, { idempotencyKey: 'kept' }))).toMatchObject({
      id: kept.id,
      created: false,
      state: 'completed',
    });
  });

  it('every end frees a key held until finished: dead, its last lease swept, cancelled, moved on, dead of a child, cancelled with its children', async () => {
    const [parentName, childName, nextName] = [
      ctx.jobName('until-parent'),
      ctx.jobName('until-child'),
      ctx.jobName('until-next'),
    ];
    const { engine, clock } = ctx.engine();
    // Each end on a type of its own, whose one job the claim takes; the key frees for the next enqueue of it.
    const ending = async (
      end: string,
      options: EnqueueInput['options'],
      endIt: (name: string, id: string) => Promise<unknown>,
    ) => {
      const name = ctx.jobName(`until-${end}`);
      const held = await engine.enqueue(job(name, { n: 1 }, untilFinished(end, options)));
      await endIt(name, held.id);
      const again = await engine.enqueue(job(name, { n: 2 }, untilFinished(end)));
      expect(again.created).toBe(true);
      expect(again.id).not.toBe(held.id);
      return (await engine.get(held.id)).state;
    };
    const fail = async (name: string) => engine.fail(await claimOne(engine, name), { message: 'no' });
    expect(await ending('dead', { maxAttempts: 1 }, fail)).toBe('dead');
    const sweep = async (name: string) => {
      await claimOne(engine, name);
      await engine.sweepExpiredLeases(clock.advance(1001));
    };
    expect(await ending('swept', { maxAttempts: 1, leaseMs: 1000 }, sweep)).toBe('dead');
    expect(await ending('cancelled', {}, (_, id) => engine.cancel(id))).toBe('cancelled');
    const cancelRunning = async (name: string, id: string) => {
      await claimOne(engine, name);
      await engine.cancel(id);
    };
    expect(await ending('cancelled-running', {}, cancelRunning)).toBe('cancelled');
    const move = async (name: string) =>
      engine.moveTo(await claimOne(engine, name), job(nextName, { n: 4 }, undefined));
    expect(await ending('moved', {}, move)).toBe('completed');

    const children = [{ name: childName, version: 1, payload: {}, options: { maxAttempts: 1 } } satisfies ChildInput];
    const flow = (key: string) => ({
      name: parentName,
      version: 1,
      payload: { key },
      idempotencyKey: key,
      options: { idempotencyUntil: 'finished' as const },
      children,
    });
    const failed = await engine.flows.enqueue(flow('child-failed'));
    // Waiting for its children, it holds the key.
    expect(await engine.flows.enqueue(flow('child-failed'))).toMatchObject({ id: failed.id, created: false });
    await engine.fail(await claimOne(engine, childName), { message: 'child failed' });
    expect((await engine.get(failed.id)).state).toBe('dead');
    const afterFailed = await engine.flows.enqueue(flow('child-failed'));
    expect(afterFailed.created).toBe(true);
    expect(afterFailed.id).not.toBe(failed.id);

    const parent = await engine.flows.enqueue(flow('cancelled-parent'));
    expect(await engine.cancel(parent.id)).toBe(true);
    const afterCancel = await engine.flows.enqueue(flow('cancelled-parent'));
    expect(afterCancel.created).toBe(true);
    expect(afterCancel.id).not.toBe(parent.id);
  });

  it(`${CONCURRENT} concurrent enqueues with a key whose job finished make exactly one new job`, async () => {
    const name = ctx.jobName('until-race');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const options = untilFinished('race');
    const old = await engines[0]!.enqueue(job(name, { n: -1 }, options));
    await engines[0]!.complete(await claimOne(engines[0]!, name), null);
    await expectOneTakesOver(engines, name, options, old.id);
  });

  it('debounce mode preserveRunAt replaces the waiting job’s payload and options but keeps its run time', async () => {
    const name = ctx.jobName('debounce-preserve');
    const { engine, store, clock } = ctx.engine();
    const start = clock.now().getTime();
    const first = await engine.enqueue(job(name, { n: 1 }, { debounce: { key: 'p', delayMs: 1000 } }));
    clock.advance(600);
    const debounce = { key: 'p', delayMs: 1000, mode: 'preserveRunAt' as const };
    const second = await engine.enqueue(job(name, { n: 2 }, { debounce, priority: 3 }));
    expect(second).toEqual({ id: first.id, created: false, state: 'scheduled' });
    expect(await store.getJob(first.id)).toMatchObject({
      payload: { n: 2 },
      priority: 3,
      runAt: new Date(start + 1000),
      updatedAt: new Date(start + 600),
    });
    clock.advance(400);
    expect(await claimOne(engine, name)).toMatchObject({ id: first.id, payload: { n: 2 } });
    // With none waiting, it makes a job delayMs ahead, as any debounce does.
    const third = await engine.enqueue(job(name, { n: 3 }, { debounce }));
    expect(third.created).toBe(true);
    expect((await store.getJob(third.id))?.runAt).toEqual(new Date(start + 2000));
  });

  it('debounce mode keepFirst leaves the waiting job as it is and answers with it; once it has started, it makes a new one', async () => {
    const name = ctx.jobName('debounce-keep');
    const { engine, store, clock } = ctx.engine();
    const start = clock.now().getTime();
    const debounce = { key: 'f', delayMs: 1000, mode: 'keepFirst' as const };
    const first = await engine.enqueue(job(name, { n: 1 }, { debounce }));
    expect(first).toMatchObject({ created: true, state: 'scheduled' });
    const before = await store.getJob(first.id);
    clock.advance(600);
    expect(await engine.enqueue(job(name, { n: 2 }, { debounce, priority: 5 }))).toEqual({
      id: first.id,
      created: false,
      state: 'scheduled',
    });
    expect(await store.getJob(first.id)).toEqual(before);
    expect(before).toMatchObject({ payload: { n: 1 }, priority: 0, runAt: new Date(start + 1000) });

    clock.advance(400);
    expect(await claimOne(engine, name)).toMatchObject({ id: first.id, payload: { n: 1 } });
    const second = await engine.enqueue(job(name, { n: 3 }, { debounce }));
    expect(second.created).toBe(true);
    expect(await store.getJob(first.id)).toMatchObject({ state: 'active', debounceKey: null });
  });

  it('enqueueMany: debounces of one key act on each other as their modes say', async () => {
    const name = ctx.jobName('debounce-modes-batch');
    const { engine, store, clock } = ctx.engine();
    const start = clock.now().getTime();
    const results = await engine.enqueueMany([
      job(name, { n: 1 }, { debounce: { key: 'a', delayMs: 100 } }),
      job(name, { n: 2 }, { debounce: { key: 'a', delayMs: 100, mode: 'keepFirst' } }),
      job(name, { n: 3 }, { debounce: { key: 'b', delayMs: 100 } }),
      job(name, { n: 4 }, { debounce: { key: 'b', delayMs: 500, mode: 'preserveRunAt' } }),
    ]);
    expect(results.map((r) => r.created)).toEqual([true, false, true, false]);
    expect(await store.getJob(results[0]!.id)).toMatchObject({ payload: { n: 1 } });
    expect(await store.getJob(results[2]!.id)).toMatchObject({ payload: { n: 4 }, runAt: new Date(start + 100) });
  });

  it(`${CONCURRENT} concurrent keepFirst debounces of one key leave one job, which a later keepFirst leaves as it is`, async () => {
    const name = ctx.jobName('debounce-keep-race');
    const clock = new ManualClock();
    const engines = await clientEngines(clock);
    const debounce = { key: 'race', delayMs: 60_000, mode: 'keepFirst' as const };
    const results = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, n) =>
        engines[n % engines.length]!.enqueue(job(name, { n }, { debounce })),
      ),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const [kept] = await engines[0]!.store.listJobs({ name, limit: 10 });
    await engines[3]!.enqueue(job(name, { n: 'last' }, { debounce }));
    expect(await engines[0]!.store.listJobs({ name, limit: 10 })).toEqual([kept]);
  });

  it('bad idempotencyUntil and debounce modes, and their contradictions, are VALIDATION errors, and nothing is stored', async () => {
    const name = ctx.jobName('modes-invalid');
    const { engine, store } = ctx.engine();
    for (const options of [
      { idempotencyUntil: 'finished' as const },
      { idempotencyKey: 'k', idempotencyUntil: 'forever' as 'finished' },
      { debounce: { key: 'k', delayMs: 10 }, idempotencyUntil: 'finished' as const },
      { debounce: { key: 'k', delayMs: 10, mode: 'latest' as 'replace' } },
    ]) {
      await expectWorkqError(engine.enqueue(job(name, { n: 1 }, options)), 'VALIDATION');
    }
    expect(await store.listJobs({ name, limit: 10 })).toEqual([]);
    const from = ctx.jobName('modes-move');
    await engine.enqueue(job(from, {}, undefined));
    const lease = await claimOne(engine, from);
    await expectWorkqError(engine.moveTo(lease, job(name, { n: 2 }, untilFinished('m'))), 'VALIDATION');
    await engine.complete(lease);
  });
}
