import { expect, it } from 'vitest';
import { ERROR_HISTORY_LIMITS } from '../../src/jobs.ts';
import { claimOne, type SuiteContext } from './context.ts';

/** Retries: failed attempts retry after their backoff until maxAttempts; then dead, listable and retryable. */
export function registerRetryTests(ctx: SuiteContext): void {
  it('fixed backoff: the job is scheduled exactly delayMs later, not claimable before, claimable at runAt', async () => {
    const name = ctx.jobName('fixed');
    const { engine, clock } = ctx.engine();
    const backoff = { type: 'fixed', delayMs: 5_000 } as const;
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { backoff, maxAttempts: 3 } });
    const lease = await claimOne(engine, name);
    const failedAt = clock.now().getTime();

    const status = await engine.fail(lease, { message: 'try again' });
    expect(status).toMatchObject({ id, state: 'scheduled', attempts: 1 });
    expect(status.runAt.getTime()).toBe(failedAt + 5_000);
    expect(status.error).toMatchObject({ message: 'try again', attempt: 1 });
    expect((await engine.get(id)).state).toBe('scheduled');

    clock.advance(4_999);
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' })).toEqual([]);
    clock.advance(1);
    expect((await engine.get(id)).state).toBe('ready');
    expect(await claimOne(engine, name)).toMatchObject({ id, attempt: 2 });
  });

  it('a retry due at once is announced to ready listeners, as a new job is; one due later is not', async () => {
    const name = ctx.jobName('retry-now');
    const { engine } = ctx.engine();
    const woken: string[] = [];
    const stopListening = engine.onReady((readyName) => woken.push(readyName));
    try {
      const backoff = { type: 'fixed', delayMs: 0 } as const;
      await engine.enqueue({ name, version: 1, payload: {}, options: { backoff, maxAttempts: 3 } });
      woken.length = 0;
      expect(await engine.fail(await claimOne(engine, name), { message: 'again' })).toMatchObject({ state: 'ready' });
      expect(woken).toEqual([name]);

      const later = { type: 'fixed', delayMs: 5_000 } as const;
      await engine.enqueue({ name: `${name}-later`, version: 1, payload: {}, options: { backoff: later } });
      woken.length = 0;
      const failed = await engine.fail(await claimOne(engine, `${name}-later`), { message: 'later' });
      expect(failed.state).toBe('scheduled');
      expect(woken).toEqual([]);
    } finally {
      stopListening();
    }
  });

  it('exponential backoff doubles per attempt within [d/2, d], capped by maxDelayMs', async () => {
    const name = ctx.jobName('exponential');
    const { engine, clock } = ctx.engine();
    const backoff = { type: 'exponential', delayMs: 1_000, maxDelayMs: 6_000 } as const;
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { backoff, maxAttempts: 6 } });
    for (let attempt = 1; attempt <= 5; attempt++) {
      const lease = await claimOne(engine, name);
      expect(lease.attempt).toBe(attempt);
      const failedAt = clock.now().getTime();
      const status = await engine.fail(lease, { message: `failure ${attempt}` });
      const full = Math.min(6_000, 1_000 * 2 ** (attempt - 1));
      const delay = status.runAt.getTime() - failedAt;
      expect(status.state).toBe('scheduled');
      expect(delay).toBeGreaterThanOrEqual(full / 2);
      expect(delay).toBeLessThanOrEqual(full);
      const stored = await engine.get(id);
      expect(stored.runAt.getTime()).toBe(status.runAt.getTime());
      if (delay > 0) {
        clock.advance(delay - 1);
        expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' })).toEqual([]);
      }
      clock.set(status.runAt);
    }
  });

  it('after maxAttempts failures the job is dead with its last error, and listable as dead', async () => {
    const name = ctx.jobName('exhausted');
    const { engine, clock } = ctx.engine();
    const backoff = { type: 'fixed', delayMs: 100 } as const;
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { backoff, maxAttempts: 3 } });
    await engine.enqueue({ name, version: 1, payload: { other: true }, options: { runAt: new Date(2100, 0, 1) } });
    for (let attempt = 1; attempt <= 3; attempt++) {
      const status = await engine.fail(await claimOne(engine, name), { message: `boom ${attempt}` });
      expect(status.state).toBe(attempt < 3 ? 'scheduled' : 'dead');
      clock.advance(100);
    }
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' })).toEqual([]);
    const dead = await engine.get(id);
    expect(dead).toMatchObject({ state: 'dead', attempts: 3 });
    expect(dead.error).toMatchObject({ message: 'boom 3', attempt: 3 });
    expect(dead.error?.permanent).toBeUndefined();
    expect(dead.finishedAt).toBeInstanceOf(Date);

    const listed = await engine.list({ name, state: 'dead' });
    expect(listed.jobs.map((j) => j.id)).toEqual([id]);
    expect(listed.jobs[0]?.error).toMatchObject({ message: 'boom 3', attempt: 3 });
  });

  it("every failed attempt's error is kept, with its class and cut stack, a lost lease's too, the latest 25", async () => {
    const name = ctx.jobName('error-history');
    const { engine, clock } = ctx.engine();
    const backoff = { type: 'fixed', delayMs: 0 } as const;
    const options = { backoff, maxAttempts: 40, leaseMs: 1_000 };
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options });
    const stack = `TypeError: no size\n${'    at convert (/srv/worker/convert.ts:12:7)\n'.repeat(200)}`;
    await engine.fail(await claimOne(engine, name), { message: 'no size', errorName: 'TypeError', stack });
    await claimOne(engine, name);
    clock.advance(1_000);
    await engine.fail(await claimOne(engine, name), { message: 'boom 3' });

    const { errors } = await engine.get(id);
    expect(errors).toMatchObject([
      { attempt: 1, name: 'TypeError', message: 'no size' },
      { attempt: 2, code: 'LEASE_EXPIRED' },
      { attempt: 3, message: 'boom 3' },
    ]);
    expect(errors?.[0]?.stack?.length).toBeLessThanOrEqual(ERROR_HISTORY_LIMITS.stackChars);
    expect(errors?.[0]?.stack).toMatch(/^TypeError: no size\n {4}at convert \(\/srv\/worker\/convert\.ts:12:7\)/);
    expect(errors?.[1]?.stack).toBeUndefined();

    for (let attempt = 4; attempt <= 30; attempt++) {
      await engine.fail(await claimOne(engine, name), { message: `boom ${attempt}` });
    }
    const later = await engine.get(id);
    expect(later.errors?.map((error) => error.attempt)).toEqual(Array.from({ length: 25 }, (_, i) => i + 6));
    expect(later.error).toEqual(later.errors?.at(-1));
    // A listing carries each job's last error, not its history.
    const [listed] = (await engine.list({ name, state: 'ready' })).jobs;
    expect(listed?.error).toMatchObject({ message: 'boom 30' });
    expect(listed?.errors).toBeUndefined();
  });

  it('a permanent failure goes dead at once, whatever attempts remain', async () => {
    const name = ctx.jobName('permanent');
    const { engine } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { maxAttempts: 10 } });
    const status = await engine.fail(await claimOne(engine, name), { message: 'bad input', permanent: true });
    expect(status).toMatchObject({ state: 'dead', attempts: 1 });
    expect(await engine.get(id)).toMatchObject({
      state: 'dead',
      error: { message: 'bad input', permanent: true, attempt: 1 },
    });
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' })).toEqual([]);
  });

  it('retryDead by ids and by name makes dead jobs claimable again with attempts reset', async () => {
    const name = ctx.jobName('retry-dead');
    const { engine, clock } = ctx.engine();
    const results = await engine.enqueueMany([1, 2, 3].map((n) => ({ name, version: 1, payload: { n } })));
    const ids = results.map((r) => r.id);
    for (let i = 0; i < 3; i++) await engine.fail(await claimOne(engine, name), { message: 'x', permanent: true });
    const untouched = await engine.enqueue({ name, version: 1, payload: { n: 4 }, options: { maxAttempts: 1 } });
    await engine.complete(await claimOne(engine, name));

    clock.advance(1_000);
    expect(await engine.retryDead({ ids: [ids[0]!] })).toBe(1);
    const revived = await engine.get(ids[0]!);
    expect(revived).toMatchObject({ state: 'ready', attempts: 0 });
    expect(revived.runAt).toEqual(clock.now());
    expect((await engine.get(ids[1]!)).state).toBe('dead');
    expect(await claimOne(engine, name)).toMatchObject({ id: ids[0], attempt: 1, payload: { n: 1 } });

    expect(await engine.retryDead({ name })).toBe(2);
    expect(await engine.retryDead({ name })).toBe(0);
    const claimed = await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' });
    expect(claimed.map((j) => j.id).sort()).toEqual([ids[1], ids[2]].sort());
    expect(claimed.every((j) => j.attempt === 1)).toBe(true);
    expect((await engine.get(untouched.id)).state).toBe('completed');
  });

  it('retryDead by name touches only that job type', async () => {
    const name = ctx.jobName('retry-scope');
    const otherName = ctx.jobName('retry-scope-other');
    const { engine } = ctx.engine();
    const { id } = await engine.enqueue({ name: otherName, version: 1, payload: {} });
    await engine.fail(await claimOne(engine, otherName), { message: 'x', permanent: true });
    expect(await engine.retryDead({ name })).toBe(0);
    expect((await engine.get(id)).state).toBe('dead');
  });
}
