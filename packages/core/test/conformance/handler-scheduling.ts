import { expect, it } from 'vitest';
import { newLeaseToken } from '../../src/engine/ids.ts';
import type { ClaimRequest } from '../../src/engine/store.ts';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';
import { flowClaimers } from './flow-control.ts';

/** A claim of up to `limit` jobs of `name` at `now`. */
function claimAt(name: string, now: Date, limit = 10): ClaimRequest {
  return { name, minVersion: 1, maxVersion: 1, limit, leaseToken: newLeaseToken(), workerId: 'w', leaseMs: null, now };
}

/**
 * Handler-driven scheduling (issue 51, item 7): a handler puts its job back to wait without spending an attempt
 * (`ctx.delay`, `ctx.retryAt`: `Store.snoozeJob`), or holds its whole type after an upstream's 429
 * (`ctx.rateLimited`: the type's `heldUntil`, honoured by every claim of the store).
 */
export function registerHandlerSchedulingTests(ctx: SuiteContext): void {
  it('a delayed job waits until its new run time, keeping its id and payload, and runs again as the same attempt', async () => {
    const name = ctx.jobName('delay');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: { n: 7 }, options: { maxAttempts: 2 } });
    const first = await claimOne(engine, name);
    expect(first.attempt).toBe(1);

    const { runAt } = await engine.snooze({ ...first, name }, { delayMs: 5_000 });
    expect(runAt.getTime()).toBe(clock.now().getTime() + 5_000);
    const status = await engine.get(id);
    expect(status).toMatchObject({ id, state: 'scheduled', attempts: 0 });
    expect((await ctx.store.getJob(id))?.payload).toEqual({ n: 7 });
    expect(status.runAt.getTime()).toBe(runAt.getTime());
    expect(status.error).toBeUndefined();

    clock.advance(4_999);
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w' })).toEqual([]);
    clock.advance(1);
    const second = await claimOne(engine, name);
    expect(second).toMatchObject({ id, attempt: 1, payload: { n: 7 } });

    // However often it is delayed, a delayed attempt never counts toward maxAttempts.
    for (let round = 0; round < 3; round++) {
      const held = round === 0 ? second : await claimOne(engine, name);
      expect(held.attempt).toBe(1);
      await engine.snooze({ ...held, name }, { runAt: clock.advance(0) });
    }
    const last = await claimOne(engine, name);
    expect(await engine.fail(last, { message: 'once' })).toMatchObject({ attempts: 1 });
    expect((await engine.get(id)).state).not.toBe('dead');
  });

  it('retryAt a time already past makes the job ready at once; a delay wakes no claim until it is due', async () => {
    const name = ctx.jobName('retry-at');
    const { engine, clock } = ctx.engine();
    const woken: string[] = [];
    const stop = engine.onReady((readyName) => woken.push(readyName));
    try {
      const { id } = await engine.enqueue({ name, version: 1, payload: {} });
      woken.length = 0;
      await engine.snooze({ ...(await claimOne(engine, name)), name }, { runAt: new Date(clock.now().getTime() - 1) });
      expect((await engine.get(id)).state).toBe('ready');
      expect(woken).toEqual([name]);
      expect((await claimOne(engine, name)).attempt).toBe(1);
    } finally {
      stop();
    }
  });

  it('a delay with a stale lease is LEASE_LOST and changes nothing; bad delays are VALIDATION', async () => {
    const name = ctx.jobName('delay-fenced');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { leaseMs: 1_000 } });
    const lease = await claimOne(engine, name);
    for (const delayMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, 366 * 86_400_000]) {
      await expectWorkqError(engine.snooze({ ...lease, name }, { delayMs }), 'VALIDATION');
    }
    await expectWorkqError(engine.snooze({ ...lease, name }, { runAt: new Date('not a date') }), 'VALIDATION');
    expect(await engine.get(id)).toMatchObject({ state: 'active', attempts: 1 });

    const stale = { ...lease, leaseToken: newLeaseToken(), name };
    await expectWorkqError(engine.snooze(stale, { delayMs: 1_000 }), 'LEASE_LOST');
    clock.advance(1_000);
    const before = await ctx.store.getJob(id);
    await expectWorkqError(engine.snooze({ ...lease, name }, { delayMs: 1_000 }), 'LEASE_LOST');
    expect(await ctx.store.getJob(id)).toEqual(before);
  });

  it('a debounced job put back by a delay has started: it gives up its key, and a later debounce makes a new job', async () => {
    const name = ctx.jobName('delay-debounced');
    const { engine } = ctx.engine();
    const debounced = (n: number, mode: 'replace' | 'preserveRunAt' | 'keepFirst') => ({
      name,
      version: 1,
      payload: { n },
      options: { debounce: { key: 'digest', delayMs: 0, mode } },
    });
    const first = await engine.enqueue(debounced(1, 'replace'));
    const lease = await claimOne(engine, name);
    expect(lease.id).toBe(first.id);
    const { runAt } = await engine.snooze({ ...lease, name }, { delayMs: 5_000 });
    expect(await engine.get(first.id)).toMatchObject({ state: 'scheduled', attempts: 0 });

    for (const mode of ['replace', 'preserveRunAt', 'keepFirst'] as const) {
      const next = await engine.enqueue(debounced(2, mode));
      expect(next.id, mode).not.toBe(first.id);
    }
    // The delayed job runs as it was put back: its payload, its run time, no key.
    const kept = await engine.get(first.id);
    expect(kept).toMatchObject({ state: 'scheduled', attempts: 0, runAt });
    expect(kept.debounceKey).toBeUndefined();
    expect((await ctx.store.getJob(first.id))?.payload).toEqual({ n: 1 });
    // The new job holds the key: the later enqueues of the loop acted on it.
    const [second] = (await engine.list({ name, state: 'ready' })).jobs;
    expect(second).toMatchObject({ debounceKey: 'digest' });
    expect((await engine.list({ name })).jobs).toHaveLength(2);

    // A job given back by a hold goes back to its place, as one given back unstarted: it keeps its key.
    const held = await claimOne(engine, name);
    expect(held.id).toBe(second?.id);
    await engine.rateLimited(held, 1_000);
    const changed = await engine.enqueue(debounced(3, 'replace'));
    expect(changed).toMatchObject({ id: held.id, created: false });
    expect((await ctx.store.getJob(held.id))?.payload).toEqual({ n: 3 });
  });

  it('a delayed child keeps its parent: its end still settles the parent', async () => {
    const [parentName, childName] = [ctx.jobName('delay-parent'), ctx.jobName('delay-child')];
    const { engine, clock } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: [{ name: childName, version: 1, payload: { page: 1 } }],
    });
    const held = await claimOne(engine, childName);
    await engine.snooze({ ...held, name: childName }, { delayMs: 2_000 });
    expect((await engine.get(held.id)).parentId).toBe(parent.id);
    clock.advance(2_000);
    const again = await claimOne(engine, childName);
    expect(again).toMatchObject({ id: held.id, attempt: 1, parentId: parent.id });
    await engine.complete(again, null);
    expect((await engine.get(parent.id)).state).toBe('ready');
  });

  it('a hold stops every claim of its type, on every connection, until it ends; other types keep running', async () => {
    const [name, other] = [ctx.jobName('hold'), ctx.jobName('hold-other')];
    const { engine, clock } = ctx.engine();
    const [, elsewhere] = await flowClaimers(ctx, 2);
    const { id } = await engine.enqueue({ name, version: 1, payload: { n: 1 }, options: { maxAttempts: 1 } });
    await engine.enqueue({ name, version: 1, payload: { n: 2 } });
    await engine.enqueue({ name: other, version: 1, payload: {} });
    const lease = await claimOne(engine, name);
    expect(lease.id).toBe(id);

    const { heldUntil } = await engine.rateLimited(lease, 10_000);
    expect(heldUntil.getTime()).toBe(clock.now().getTime() + 10_000);
    expect(await engine.get(id)).toMatchObject({ state: 'ready', attempts: 0 });
    expect(await engine.claimUnderLimits({ name, maxVersion: 1, limit: 5, workerId: 'w' })).toEqual({
      jobs: [],
      paused: false,
      nextStartAt: heldUntil,
    });
    expect((await claimOne(engine, other)).name).toBe(other);
    for (const store of [ctx.store, elsewhere!]) {
      expect(await store.claimJobsUnlessHeld(claimAt(name, clock.now()))).toBeNull();
      const limited = await store.claimLimitedJobs(claimAt(name, clock.now()));
      expect(limited.jobs).toEqual([]);
      expect(limited.nextStartAt?.getTime()).toBe(heldUntil.getTime());
    }

    clock.advance(9_999);
    expect(await engine.claim({ name, maxVersion: 1, limit: 5, workerId: 'w' })).toEqual([]);
    clock.advance(1);
    const after = await engine.claim({ name, maxVersion: 1, limit: 5, workerId: 'w' });
    expect(after.map((job) => [job.id, job.attempt])).toEqual([
      [id, 1],
      [expect.any(String), 1],
    ]);
    // The hold ended by itself: the plain claim leases the type again.
    await engine.enqueue({ name, version: 1, payload: { n: 3 } });
    expect(await ctx.store.claimJobsUnlessHeld(claimAt(name, clock.now()))).toHaveLength(1);
  });

  it('a hold only grows: a shorter one leaves the longer one stored', async () => {
    const name = ctx.jobName('hold-grows');
    const at = new Date('2026-03-01T00:00:00.000Z');
    const later = new Date(at.getTime() + 60_000);
    const longer = await ctx.store.updateQueueSettings(name, { heldUntil: later }, at);
    const shorter = await ctx.store.updateQueueSettings(name, { heldUntil: new Date(at.getTime() + 1_000) }, at);
    const changed = await ctx.store.updateQueueSettings(name, { paused: false }, at);
    for (const settings of [longer, shorter, changed]) {
      expect(settings?.heldUntil?.getTime()).toBe(later.getTime());
    }
    expect(settings(await ctx.store.listQueueSettings(name))).toBe(later.getTime());
  });

  it('a change with heldUntil null lifts a hold, in the same write as the rest of the change', async () => {
    const name = ctx.jobName('hold-lifted');
    const at = new Date('2026-03-01T00:00:00.000Z');
    await ctx.store.updateQueueSettings(name, { heldUntil: new Date(at.getTime() + 60_000), paused: true }, at);
    const lifted = await ctx.store.updateQueueSettings(name, { heldUntil: null, paused: false }, at);
    expect(lifted).toMatchObject({ paused: false, heldUntil: null });
    expect(await ctx.store.listQueueSettings(name)).toMatchObject([{ paused: false, heldUntil: null }]);
    // On a type without settings, it creates them unheld.
    const fresh = ctx.jobName('hold-lifted-fresh');
    expect(await ctx.store.updateQueueSettings(fresh, { heldUntil: null }, at)).toMatchObject({ heldUntil: null });
  });

  it('queues() shows a running hold; resume lifts it as well as a pause, and every claim leases the type at once', async () => {
    const name = ctx.jobName('hold-resume');
    const { engine, clock } = ctx.engine();
    const [, elsewhere] = await flowClaimers(ctx, 2);
    await engine.enqueue({ name, version: 1, payload: { n: 1 } });
    await engine.enqueue({ name, version: 1, payload: { n: 2 } });
    const { heldUntil } = await engine.rateLimited(await claimOne(engine, name), 60_000);
    await engine.pause(name);
    const queueOf = async () => (await engine.queues()).find((queue) => queue.name === name);
    expect(await queueOf()).toMatchObject({ paused: true, heldUntil });

    await engine.resume(name);
    const resumed = await queueOf();
    expect(resumed).toMatchObject({ paused: false });
    expect(resumed).not.toHaveProperty('heldUntil');
    expect(settings(await ctx.store.listQueueSettings(name))).toBeUndefined();
    expect(await elsewhere!.claimJobsUnlessHeld(claimAt(name, clock.now()))).toHaveLength(2);

    // A hold that ended by itself is not shown either.
    await engine.enqueue({ name, version: 1, payload: { n: 3 } });
    await engine.rateLimited(await claimOne(engine, name), 1_000);
    expect(await queueOf()).toHaveProperty('heldUntil');
    clock.advance(1_000);
    expect(await queueOf()).not.toHaveProperty('heldUntil');
  });

  it('a hold with a stale lease is LEASE_LOST and holds nothing; bad lengths are VALIDATION', async () => {
    const name = ctx.jobName('hold-fenced');
    const { engine } = ctx.engine();
    await engine.enqueue({ name, version: 1, payload: {} });
    const lease = await claimOne(engine, name);
    for (const holdMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 86_400_001]) {
      await expectWorkqError(engine.rateLimited(lease, holdMs), 'VALIDATION');
    }
    await expectWorkqError(engine.rateLimited({ ...lease, leaseToken: newLeaseToken() }, 1_000), 'LEASE_LOST');
    expect(await ctx.store.listQueueSettings(name)).toEqual([]);
    expect(await engine.get(lease.id)).toMatchObject({ state: 'active', attempts: 1 });
  });
}

/** The hold stored in the only settings listed, in epoch ms. */
function settings(list: readonly { heldUntil: Date | null }[]): number | undefined {
  expect(list).toHaveLength(1);
  return list[0]?.heldUntil?.getTime();
}
