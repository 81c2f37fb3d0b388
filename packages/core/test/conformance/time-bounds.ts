import { expect, it } from 'vitest';
import { LEASE_MS_LIMITS } from '../../src/jobs.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { expectWorkqError, type SuiteContext } from './context.ts';

/** Lease lengths no entry may set: past `LEASE_MS_LIMITS`, under it, or not a whole number of milliseconds. */
const OUT_OF_BOUNDS_LEASES_MS = [
  LEASE_MS_LIMITS.max + 1,
  LEASE_MS_LIMITS.min - 1,
  0,
  -1,
  1.5,
  9_007_199_254_740_991,
  Number.POSITIVE_INFINITY,
  Number.NaN,
];

/** Every duration that ends up in a stored time is bounded, and the bounds hold on every store. */
export function registerTimeBoundTests(ctx: SuiteContext): void {
  it('a lease length out of bounds is refused by enqueue, job defaults, claim and extend; the longest is kept', async () => {
    const name = ctx.jobName('lease-bounds');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {} });
    const ready = await ctx.store.getJob(id);
    for (const leaseMs of OUT_OF_BOUNDS_LEASES_MS) {
      const error = await expectWorkqError(
        engine.enqueue({ name, version: 1, payload: {}, options: { leaseMs } }),
        'VALIDATION',
      );
      expect(error.message).toMatch(/leaseMs must be an integer from 100 to 86400000/);
      const withDefault = ctx.engine({ defaults: { leaseMs } }).engine;
      await expectWorkqError(withDefault.enqueue({ name, version: 1, payload: {} }), 'VALIDATION');
      await expectWorkqError(engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1', leaseMs }), 'VALIDATION');
    }
    expect(await ctx.store.getJob(id), 'a refused claim leased the job').toEqual(ready);
    expect((await engine.list({ name })).jobs).toHaveLength(1);

    const [lease] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1', leaseMs: LEASE_MS_LIMITS.max });
    expect(lease?.leaseExpiresAtMs).toBe(clock.now().getTime() + LEASE_MS_LIMITS.max);
    expect((await engine.get(id)).leaseExpiresAt?.getTime()).toBe(lease?.leaseExpiresAtMs);
    const held = await ctx.store.getJob(id);
    for (const leaseMs of OUT_OF_BOUNDS_LEASES_MS) {
      await expectWorkqError(engine.extend(lease!, leaseMs), 'VALIDATION');
    }
    expect(await ctx.store.getJob(id), 'a refused extension moved the lease').toEqual(held);
    clock.advance(1_000);
    const { leaseExpiresAt } = await engine.extend(lease!, LEASE_MS_LIMITS.max);
    expect(leaseExpiresAt.getTime()).toBe(clock.now().getTime() + LEASE_MS_LIMITS.max);
    expect((await engine.get(id)).leaseExpiresAt).toEqual(leaseExpiresAt);
    await engine.complete(lease!);
  });

  it('the latest run times are kept exactly, and later ones refused, on a clock near their end', async () => {
    const name = ctx.jobName('run-at-bounds');
    const latest = new Date(Date.UTC(9999, 11, 31, 23, 59, 59, 999));
    const { engine } = ctx.engine({ clock: new ManualClock(new Date(Date.UTC(9999, 0, 1))) });
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { runAt: latest } });
    expect((await engine.get(id)).runAt).toEqual(latest);
    await expectWorkqError(
      engine.enqueue({ name, version: 1, payload: {}, options: { runAt: new Date(latest.getTime() + 1) } }),
      'VALIDATION',
    );
    // From near the end of the range, a long delay, key TTL or debounce would pass it: each is refused.
    for (const options of [
      { delayMs: 365 * 86_400_000 },
      { idempotencyKey: 'k', idempotencyTtlMs: 365 * 86_400_000 },
      { debounce: { key: 'd', delayMs: 365 * 86_400_000 } },
    ]) {
      await expectWorkqError(engine.enqueue({ name, version: 1, payload: {}, options }), 'VALIDATION');
    }
    expect((await engine.list({ name })).jobs.map((job) => job.id)).toEqual([id]);
  });
}
