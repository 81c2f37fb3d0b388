import { expect, it } from 'vitest';
import { claimOne, type SuiteContext } from './context.ts';

/** Time: delayed and scheduled jobs are not delivered before runAt; waiting jobs never block ready ones. */
export function registerTimeTests(ctx: SuiteContext): void {
  it('a delayed job is scheduled, not delivered before its time, then ready and delivered', async () => {
    const name = ctx.jobName('delayed');
    const { engine, clock } = ctx.engine();
    const enqueuedAt = clock.now().getTime();
    const result = await engine.enqueue({ name, version: 1, payload: {}, options: { delayMs: 10_000 } });
    expect(result.state).toBe('scheduled');
    const status = await engine.get(result.id);
    expect(status.state).toBe('scheduled');
    expect(status.runAt.getTime()).toBe(enqueuedAt + 10_000);

    clock.advance(9_999);
    expect(await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' })).toEqual([]);
    expect((await engine.get(result.id)).state).toBe('scheduled');
    clock.advance(1);
    expect((await engine.get(result.id)).state).toBe('ready');
    expect((await claimOne(engine, name)).id).toBe(result.id);
  });

  it('a job scheduled with runAt waits for that time; a runAt in the past is ready at once', async () => {
    const name = ctx.jobName('run-at');
    const { engine, clock } = ctx.engine();
    const runAt = new Date(clock.now().getTime() + 3_600_000);
    const later = await engine.enqueue({ name, version: 1, payload: { when: 'later' }, options: { runAt } });
    const past = new Date(clock.now().getTime() - 3_600_000);
    const earlier = await engine.enqueue({ name, version: 1, payload: { when: 'past' }, options: { runAt: past } });
    expect(later.state).toBe('scheduled');
    expect(earlier.state).toBe('ready');
    expect((await engine.get(later.id)).runAt).toEqual(runAt);

    const first = await claimOne(engine, name);
    expect(first.id).toBe(earlier.id);
    await engine.complete(first);
    clock.set(new Date(runAt.getTime() - 1));
    expect(await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' })).toEqual([]);
    clock.set(runAt);
    expect((await claimOne(engine, name)).id).toBe(later.id);
  });

  it('a waiting high-priority job does not block a ready low-priority one', async () => {
    const name = ctx.jobName('no-block');
    const { engine, clock } = ctx.engine();
    const waiting = await engine.enqueueMany(
      Array.from({ length: 20 }, (_, n) => ({
        name,
        version: 1,
        payload: { n },
        options: { priority: 1_000, delayMs: 60_000 },
      })),
    );
    const ready = await engine.enqueue({ name, version: 1, payload: {}, options: { priority: -1_000 } });

    const claimed = await engine.claim({ name, maxVersion: 1, limit: 5, workerId: 'w1' });
    expect(claimed.map((j) => j.id)).toEqual([ready.id]);
    await engine.completeMany(claimed);
    for (const { id } of waiting) expect((await engine.get(id)).state).toBe('scheduled');
    clock.advance(60_000);
    expect(await engine.claim({ name, maxVersion: 1, limit: 50, workerId: 'w1' })).toHaveLength(20);
  });

  it('jobs that come due take their place in order, and a waiting claim is not handed a job behind them', async () => {
    const name = ctx.jobName('came-due');
    const { engine, clock } = ctx.engine();
    const high = await engine.enqueue({ name, version: 1, payload: {}, options: { priority: 5, delayMs: 1_000 } });
    const due = await engine.enqueue({ name, version: 1, payload: {}, options: { delayMs: 1_000 } });
    clock.advance(1_000);
    const waiting = { name, minVersion: 1, maxVersion: 1, limit: 1, workerId: 'waiting', leaseMs: 4_000 };
    const newer = await engine.enqueueForClaim({ name, version: 1, payload: {} }, waiting);
    expect(newer.claimed).toBeNull();
    const low = await engine.enqueue({ name, version: 1, payload: {} });
    const claimed: string[] = [];
    for (let n = 0; n < 4; n++) claimed.push((await claimOne(engine, name)).id);
    expect(claimed).toEqual([high.id, due.id, newer.result.id, low.id]);
  });

  it('of more than a thousand jobs coming due at once, the highest priority is still claimed first', async () => {
    const name = ctx.jobName('due-burst');
    const { engine, clock } = ctx.engine();
    const dueAt = clock.now().getTime() + 60_000;
    const early = Array.from({ length: 1_000 }, (_, i) => ({
      name,
      version: 1,
      payload: { i },
      options: { runAt: new Date(dueAt + i) },
    }));
    await engine.enqueueMany(early);
    // Due after all of them, but first in order by its priority.
    const urgent = {
      name,
      version: 1,
      payload: { urgent: true },
      options: { runAt: new Date(dueAt + 5_000), priority: 9 },
    };
    const { id } = await engine.enqueue(urgent);
    clock.set(new Date(dueAt + 10_000));
    expect((await claimOne(engine, name)).id).toBe(id);
    expect((await claimOne(engine, name)).payload).toEqual({ i: 0 });
  });

  it('counts and lists split waiting jobs into scheduled and ready by the clock', async () => {
    const name = ctx.jobName('split');
    const { engine, clock } = ctx.engine();
    const soon = await engine.enqueue({ name, version: 1, payload: {}, options: { delayMs: 1_000 } });
    const now = await engine.enqueue({ name, version: 1, payload: {} });
    const mine = async () => (await engine.counts()).filter((c) => c.name === name);
    const before = await mine();
    expect(before).toHaveLength(2);
    expect(before).toEqual(
      expect.arrayContaining([
        { name, version: 1, state: 'scheduled', count: 1 },
        { name, version: 1, state: 'ready', count: 1 },
      ]),
    );
    expect((await engine.list({ name, state: 'scheduled' })).jobs.map((j) => j.id)).toEqual([soon.id]);
    expect((await engine.list({ name, state: 'ready' })).jobs.map((j) => j.id)).toEqual([now.id]);
    clock.advance(1_000);
    expect(await mine()).toEqual([{ name, version: 1, state: 'ready', count: 2 }]);
    expect((await engine.list({ name, state: 'scheduled' })).jobs).toEqual([]);
  });
}
