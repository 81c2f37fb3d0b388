import { expect, it } from 'vitest';
import { RETENTION_MS_LIMITS } from '../../src/jobs.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * A job's own retention (`EnqueueOptions.retention`) beside the server-wide one: the pruner deletes a job that
 * completed or went dead with one once it has passed, and keeps every other job for the server-wide retention.
 * Each test runs on a clock years before the other tests' jobs, so its prunes cannot reach them.
 */
export function registerRetentionTests(ctx: SuiteContext): void {
  it('prunes a job by its own retention for the end it came to, and every other by the server-wide one', async () => {
    const name = ctx.jobName('retention');
    const clock = new ManualClock(new Date('2015-01-01T00:00:00.000Z'));
    const { engine, store } = ctx.engine({ clock, historyRetentionMs: DAY_MS });
    const enqueue = async (n: number, retention?: { completedMs?: number; deadMs?: number }) =>
      (
        await engine.enqueue({
          name,
          version: 1,
          payload: { n },
          options: { priority: 100 - n, ...(retention ? { retention } : {}) },
        })
      ).id;
    const short = await enqueue(1, { completedMs: MINUTE_MS });
    const plain = await enqueue(2);
    const long = await enqueue(3, { completedMs: 3 * DAY_MS });
    const onlyDead = await enqueue(4, { deadMs: 0 });
    const deadShort = await enqueue(5, { completedMs: 3 * DAY_MS, deadMs: MINUTE_MS });
    const cancelled = await enqueue(6, { completedMs: 0, deadMs: 0 });
    const retried = await enqueue(7, { deadMs: 0 });
    for (let i = 0; i < 4; i++) await engine.complete(await claimOne(engine, name));
    await engine.fail(await claimOne(engine, name), { message: 'bad input', permanent: true });
    await engine.cancel(cancelled);
    await engine.fail(await claimOne(engine, name), { message: 'bad input', permanent: true });
    // Retried in place, the job is waiting again: its retention starts over at its next end.
    expect(await engine.retryDead({ ids: [retried] })).toBe(1);
    const kept = async () => (await store.listJobs({ name, limit: 10 })).map((job) => job.id).sort();

    clock.advance(MINUTE_MS - 1);
    expect(await engine.prune()).toBe(0);
    clock.advance(1);
    expect(await engine.prune()).toBe(2);
    expect(await kept()).toEqual([plain, long, onlyDead, cancelled, retried].sort());
    expect(await store.getJob(retried)).toMatchObject({ state: 'waiting', retainDeadMs: 0 });

    clock.advance(DAY_MS);
    expect(await engine.prune(2)).toBe(2);
    expect(await engine.prune()).toBe(1);
    expect(await kept()).toEqual([long, retried].sort());

    clock.advance(2 * DAY_MS - MINUTE_MS - 1);
    expect(await engine.prune()).toBe(0);
    clock.advance(1);
    expect(await engine.prune()).toBe(1);
    expect(await kept()).toEqual([retried]);
    expect(short).not.toBe(deadShort);
    await engine.cancel(retried);
  });

  it('takes a default retention from the engine defaults, replaced whole by an enqueue its own', async () => {
    const name = ctx.jobName('retention-default');
    const clock = new ManualClock(new Date('2014-01-01T00:00:00.000Z'));
    const defaults = { retention: { completedMs: MINUTE_MS, deadMs: null } };
    const { engine, store } = ctx.engine({ clock, historyRetentionMs: DAY_MS, defaults });
    const [byDefault, own] = await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options: { priority: 2 } },
      { name, version: 1, payload: { n: 2 }, options: { priority: 1, retention: { deadMs: MINUTE_MS } } },
    ]);
    expect(await store.getJob(byDefault!.id)).toMatchObject({ retainCompletedMs: MINUTE_MS, retainDeadMs: null });
    expect(await store.getJob(own!.id)).toMatchObject({ retainCompletedMs: null, retainDeadMs: MINUTE_MS });
    expect((await engine.get(own!.id)).retention).toEqual({ deadMs: MINUTE_MS });
    expect((await engine.get(byDefault!.id)).retention).toEqual({ completedMs: MINUTE_MS });
    await engine.complete(await claimOne(engine, name));
    await engine.complete(await claimOne(engine, name));
    clock.advance(MINUTE_MS);
    expect(await engine.prune()).toBe(1);
    expect(await store.getJob(byDefault!.id)).toBeNull();
    expect(await store.getJob(own!.id)).toMatchObject({ state: 'completed' });
    clock.advance(DAY_MS);
    expect(await engine.prune()).toBe(1);
  });

  it('refuses a retention outside its bounds with VALIDATION, and stores nothing', async () => {
    const name = ctx.jobName('retention-bad');
    const { engine, store } = ctx.engine();
    for (const retention of [
      { completedMs: -1 },
      { deadMs: 1.5 },
      { completedMs: RETENTION_MS_LIMITS.max + 1 },
      { completedMs: '60000' },
      'a day',
    ]) {
      const options = { retention } as never;
      const error = await expectWorkqError(engine.enqueue({ name, version: 1, payload: {}, options }), 'VALIDATION');
      expect(error.message).toContain('retention');
    }
    expect(await store.listJobs({ name, limit: 10 })).toEqual([]);
  });

  it('refuses a retention on a job of a flow with VALIDATION, and stores nothing', async () => {
    const name = ctx.jobName('retention-flow');
    const { engine, store } = ctx.engine();
    const retention = { completedMs: MINUTE_MS };
    const flow = (parent: object, child: object) =>
      engine.flows.enqueue({
        name,
        version: 1,
        payload: {},
        options: parent,
        children: [{ name, version: 1, payload: {}, options: child }],
      });
    for (const error of [
      await expectWorkqError(flow({ retention }, {}), 'VALIDATION'),
      await expectWorkqError(flow({}, { retention }), 'VALIDATION'),
    ]) {
      expect(error.message).toContain('historyRetentionMs');
    }
    expect(await store.listJobs({ name, limit: 10 })).toEqual([]);
  });
}
