import { expect, it } from 'vitest';
import { TIMEOUT_MS_LIMITS } from '../../src/jobs.ts';
import { expectWorkqError, type SuiteContext } from './context.ts';

/**
 * A job's time limit (`timeoutMs`) is the store's to enforce, not only the worker's: no lease of an attempt
 * outlives its deadline (claim time + `timeoutMs`), so a worker that keeps extending loses the job there, the
 * sweep fails the attempt with `TIMEOUT`, and the job retries or dies by its policy.
 */
export function registerTimeLimitTests(ctx: SuiteContext): void {
  it('the claim and every extension stop at the deadline; the sweep fails the attempt with TIMEOUT, retries, then the job dies', async () => {
    const name = ctx.jobName('time-limit');
    const { engine, clock } = ctx.engine();
    const options = {
      timeoutMs: 1_000,
      leaseMs: 5_000,
      maxAttempts: 2,
      backoff: { type: 'fixed', delayMs: 0 },
    } as const;
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options });
    expect((await ctx.store.getJob(id))?.timeoutMs).toBe(1_000);

    for (const attempt of [1, 2]) {
      const claimedAtMs = clock.now().getTime();
      const [lease] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' });
      expect(lease?.attempt).toBe(attempt);
      expect(lease?.timeoutMs).toBe(1_000);
      expect(lease?.leaseExpiresAtMs, 'the first lease outlived the deadline').toBe(claimedAtMs + 1_000);
      expect((await engine.get(id)).leaseExpiresAt?.getTime()).toBe(claimedAtMs + 1_000);

      clock.advance(300);
      const within = await engine.extend(lease!, 500);
      expect(within.leaseExpiresAt.getTime(), 'an extension within the limit').toBe(claimedAtMs + 800);
      clock.advance(100);
      const capped = await engine.extend(lease!, 5_000);
      expect(capped.leaseExpiresAt.getTime(), 'the answer is not the lease the store kept').toBe(claimedAtMs + 1_000);
      expect((await engine.get(id)).leaseExpiresAt?.getTime(), 'an extension passed the deadline').toBe(
        claimedAtMs + 1_000,
      );
      clock.advance(599);
      await engine.sweepExpiredLeases(clock.now());
      expect((await engine.get(id)).state, 'swept before the deadline').toBe('active');
      await engine.progress(lease!, 50);

      clock.advance(1);
      await engine.sweepExpiredLeases(clock.now());
      const status = await engine.get(id);
      expect(status.state).toBe(attempt === 1 ? 'ready' : 'dead');
      expect(status.error).toMatchObject({ code: 'TIMEOUT', attempt });
      await expectWorkqError(engine.complete(lease!, { late: true }), 'LEASE_LOST');
      await expectWorkqError(engine.extend(lease!, 5_000), 'LEASE_LOST');
    }
    expect((await engine.get(id)).result ?? null).toBeNull();
  });

  it('a job with a time limit enqueued for a waiting claim is handed to it with its deadline, which caps its lease and times it out', async ({
    skip,
  }) => {
    ctx.requirePart('handoff', skip);
    const name = ctx.jobName('time-limit-handoff');
    const { engine, clock } = ctx.engine();
    const waiting = { name, minVersion: 1, maxVersion: 1, limit: 1, workerId: 'waiting' };
    const options = { timeoutMs: 1_000, leaseMs: 5_000, maxAttempts: 1 };
    const handedAtMs = clock.now().getTime();
    const { result, claimed } = await engine.enqueueForClaim({ name, version: 1, payload: {}, options }, waiting);
    expect(claimed, 'the job was not handed to the waiting claim').toMatchObject({
      id: result.id,
      attempt: 1,
      timeoutMs: 1_000,
      leaseExpiresAtMs: handedAtMs + 1_000,
    });
    expect(await ctx.store.getJob(result.id)).toMatchObject({
      state: 'active',
      attemptDeadline: new Date(handedAtMs + 1_000),
      leaseExpiresAt: new Date(handedAtMs + 1_000),
    });

    clock.advance(500);
    expect((await engine.extend(claimed!, 5_000)).leaseExpiresAt.getTime()).toBe(handedAtMs + 1_000);
    clock.advance(499);
    await engine.sweepExpiredLeases(clock.now());
    expect((await engine.get(result.id)).state, 'swept before the deadline').toBe('active');
    clock.advance(1);
    await engine.sweepExpiredLeases(clock.now());
    expect(await engine.get(result.id)).toMatchObject({ state: 'dead', error: { code: 'TIMEOUT', attempt: 1 } });
    await expectWorkqError(engine.complete(claimed!, {}), 'LEASE_LOST');
  });

  it('a job without a time limit is unaffected: its lease extends past any limit and its lost lease is LEASE_EXPIRED', async () => {
    const name = ctx.jobName('no-time-limit');
    const { engine, clock } = ctx.engine();
    const options = { leaseMs: 5_000, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0 } } as const;
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options });
    expect((await ctx.store.getJob(id))?.timeoutMs ?? null).toBeNull();
    const claimedAtMs = clock.now().getTime();
    const [lease] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' });
    expect(lease?.timeoutMs).toBeUndefined();
    expect(lease?.leaseExpiresAtMs).toBe(claimedAtMs + 5_000);
    clock.advance(4_000);
    expect((await engine.extend(lease!, 5_000)).leaseExpiresAt.getTime()).toBe(claimedAtMs + 9_000);
    expect((await engine.get(id)).leaseExpiresAt?.getTime()).toBe(claimedAtMs + 9_000);
    clock.advance(4_999);
    await engine.sweepExpiredLeases(clock.now());
    expect((await engine.get(id)).state).toBe('active');
    clock.advance(1);
    await engine.sweepExpiredLeases(clock.now());
    expect((await engine.get(id)).state).toBe('ready');
    expect((await engine.get(id)).error).toMatchObject({ code: 'LEASE_EXPIRED', attempt: 1 });
  });

  it('a claim of jobs with their own lease lengths and time limits stores each lease and deadline as handed', async () => {
    const name = ctx.jobName('mixed-limits');
    const { engine, clock } = ctx.engine();
    // Each claim takes two jobs: one lease length and two time limits, then two lease lengths and one limit.
    const claims = [
      [
        { options: { leaseMs: 5_000 }, leaseMs: 5_000, deadlineMs: null },
        { options: { leaseMs: 5_000, timeoutMs: 2_000 }, leaseMs: 2_000, deadlineMs: 2_000 },
      ],
      [
        { options: { leaseMs: 9_000, timeoutMs: 8_000 }, leaseMs: 8_000, deadlineMs: 8_000 },
        { options: { leaseMs: 3_000, timeoutMs: 8_000 }, leaseMs: 3_000, deadlineMs: 8_000 },
      ],
    ];
    for (const jobs of claims) {
      const ids: string[] = [];
      for (const { options } of jobs) ids.push((await engine.enqueue({ name, version: 1, payload: {}, options })).id);
      clock.advance(10);
      const claimedAtMs = clock.now().getTime();
      const leases = await engine.claim({ name, maxVersion: 1, limit: jobs.length, workerId: 'w1' });
      expect(leases.map((lease) => lease.id)).toEqual(ids);
      for (const [i, { leaseMs, deadlineMs }] of jobs.entries()) {
        const stored = await ctx.store.getJob(ids[i] as string);
        expect(leases[i]?.leaseExpiresAtMs, `${ids[i]} as handed`).toBe(claimedAtMs + leaseMs);
        expect(stored?.leaseExpiresAt?.getTime(), `${ids[i]} as stored`).toBe(claimedAtMs + leaseMs);
        expect(stored?.attemptDeadline?.getTime() ?? null, `${ids[i]}'s deadline`).toBe(
          deadlineMs === null ? null : claimedAtMs + deadlineMs,
        );
      }
    }

    // Jobs that share their limits, under a claim's own lease length: shorter than the limit, then longer.
    const shared = { leaseMs: 5_000, timeoutMs: 2_000 };
    for (const claimLeaseMs of [1_500, 4_000]) {
      const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: shared });
      clock.advance(10);
      const atMs = clock.now().getTime();
      const [lease] = await engine.claim({ name, maxVersion: 1, limit: 2, workerId: 'w1', leaseMs: claimLeaseMs });
      expect(lease?.id).toBe(id);
      const stored = await ctx.store.getJob(id);
      const expiryMs = atMs + Math.min(claimLeaseMs, shared.timeoutMs);
      expect(lease?.leaseExpiresAtMs).toBe(expiryMs);
      expect(stored?.leaseExpiresAt?.getTime()).toBe(expiryMs);
      expect(stored?.attemptDeadline?.getTime()).toBe(atMs + shared.timeoutMs);
    }
  });

  it('a time limit out of bounds is refused and nothing is stored', async () => {
    const name = ctx.jobName('time-limit-bounds');
    const { engine } = ctx.engine();
    for (const timeoutMs of [0, -1, 1.5, TIMEOUT_MS_LIMITS.min - 1, TIMEOUT_MS_LIMITS.max + 1, Number.NaN]) {
      const error = await expectWorkqError(
        engine.enqueue({ name, version: 1, payload: {}, options: { timeoutMs } }),
        'VALIDATION',
      );
      expect(error.message).toMatch(/timeoutMs must be an integer from 100 to 86400000/);
    }
    expect((await engine.list({ name })).jobs).toEqual([]);
  });
}
