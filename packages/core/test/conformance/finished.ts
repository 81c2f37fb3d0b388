import { expect, it } from 'vitest';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';

const YEAR_MS = 365 * 86_400_000;

/** Done is done: completed, dead and cancelled jobs are never delivered again, except by a replay (a new job). */
export function registerFinishedTests(ctx: SuiteContext): void {
  it('completed, dead and cancelled jobs are never claimed again, even far in the future', async () => {
    const name = ctx.jobName('finished');
    const { engine, store, clock } = ctx.engine();
    const options = { leaseMs: 1_000, maxAttempts: 3 };
    const [done, failed, cancelled, expired] = await engine.enqueueMany(
      [1, 2, 3, 4].map((n) => ({ name, version: 1, payload: { n }, options })),
    );
    expect(await engine.cancel(cancelled!.id)).toBe(true);
    const jobs = await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w1' });
    expect(jobs.map((j) => j.id).sort()).toEqual([done!.id, failed!.id, expired!.id].sort());
    const byId = new Map(jobs.map((j) => [j.id, j]));
    await engine.complete(byId.get(done!.id)!, { n: 1 });
    expect((await engine.fail(byId.get(failed!.id)!, { message: 'bad', permanent: true })).state).toBe('dead');
    await engine.complete(byId.get(expired!.id)!);
    const before = await Promise.all([done, failed, cancelled, expired].map((r) => store.getJob(r!.id)));

    for (const step of [1_001, 86_400_000, YEAR_MS]) {
      clock.advance(step);
      expect(await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w2' })).toEqual([]);
      await engine.sweepExpiredLeases();
    }
    const after = await Promise.all([done, failed, cancelled, expired].map((r) => store.getJob(r!.id)));
    expect(after).toEqual(before);
    expect(after.map((j) => j?.state)).toEqual(['completed', 'dead', 'cancelled', 'completed']);
  });

  it('finished jobs cannot be cancelled, retried as dead or completed again', async () => {
    const name = ctx.jobName('finished-ops');
    const { engine, store } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {} });
    const lease = await claimOne(engine, name);
    await engine.complete(lease, 'first');
    const before = await store.getJob(id);
    expect(await engine.cancel(id)).toBe(false);
    expect(await engine.retryDead({ ids: [id] })).toBe(0);
    await expectWorkqError(engine.complete(lease, 'second'), 'LEASE_LOST');
    expect(await store.getJob(id)).toEqual(before);
    expect(before).toMatchObject({ state: 'completed', result: 'first' });
  });

  it('an ack repeated under the lease that completed the job is reported as a repeat and changes nothing', async () => {
    const name = ctx.jobName('repeated-ack');
    const { engine, store, clock } = ctx.engine();
    const options = { leaseMs: 10_000 };
    await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options },
      { name, version: 1, payload: { n: 2 }, options },
    ]);
    const first = await claimOne(engine, name);
    const second = await claimOne(engine, name);
    expect(await engine.completeMany([{ ...first, result: 'first' }])).toEqual([
      { id: first.id, ok: true, repeated: false },
    ]);
    const before = await store.getJob(first.id);
    clock.advance(10_000);

    const outcomes = await engine.completeMany([
      { id: first.id, leaseToken: first.leaseToken, result: 'again' },
      { id: first.id, leaseToken: second.leaseToken, result: 'forged' },
      { id: second.id, leaseToken: second.leaseToken, result: 'late' },
    ]);
    expect(outcomes).toEqual([
      { id: first.id, ok: false, repeated: true },
      { id: first.id, ok: false, repeated: false },
      { id: second.id, ok: false, repeated: false },
    ]);
    expect(await store.getJob(first.id)).toEqual(before);
    expect(before).toMatchObject({ state: 'completed', result: 'first' });
    // An ack after its lease expired is lost, not a repeat: the job stays active until claimed again.
    expect((await store.getJob(second.id))?.state).toBe('active');
  });

  it('replay makes a new job with replayOf set and leaves the old one unchanged', async () => {
    const name = ctx.jobName('replay');
    const { engine, store } = ctx.engine();
    const options = { priority: 7, maxAttempts: 4, leaseMs: 9_000, backoff: { type: 'fixed', delayMs: 50 } } as const;
    const { id } = await engine.enqueue({ name, version: 1, payload: { p: 'x' }, options });
    await engine.complete(await claimOne(engine, name), { r: 1 });
    const before = await store.getJob(id);

    const replay = await engine.replay(id);
    expect(replay).toMatchObject({ created: true, state: 'ready' });
    expect(replay.id).not.toBe(id);
    expect(await store.getJob(id)).toEqual(before);
    expect(await store.getJob(replay.id)).toMatchObject({
      name,
      version: 1,
      payload: { p: 'x' },
      state: 'waiting',
      attempts: 0,
      priority: 7,
      maxAttempts: 4,
      leaseMs: 9_000,
      backoff: { type: 'fixed', delayMs: 50 },
      replayOf: id,
      result: null,
      error: null,
    });
    expect((await engine.get(replay.id)).replayOf).toBe(id);

    const again = await claimOne(engine, name);
    expect(again).toMatchObject({ id: replay.id, attempt: 1, payload: { p: 'x' } });
    await engine.complete(again);
    expect(await store.getJob(id)).toEqual(before);
  });

  it('replay of a dead or cancelled job works; of an unfinished job is CONFLICT; of an unknown id NOT_FOUND', async () => {
    const name = ctx.jobName('replay-states');
    const { engine } = ctx.engine();
    const [dead, cancelled, active, waiting] = await engine.enqueueMany(
      [1, 2, 3, 4].map((n) => ({ name, version: 1, payload: { n } })),
    );
    await engine.fail(await claimOne(engine, name), { message: 'no', permanent: true });
    expect(await engine.cancel(cancelled!.id)).toBe(true);
    expect((await claimOne(engine, name)).id).toBe(active!.id);

    expect((await engine.get(dead!.id)).state).toBe('dead');
    expect((await engine.get(waiting!.id)).state).toBe('ready');
    await expectWorkqError(engine.replay(active!.id), 'CONFLICT');
    await expectWorkqError(engine.replay(waiting!.id), 'CONFLICT');
    await expectWorkqError(engine.replay('00000000-0000-7000-8000-000000000000'), 'NOT_FOUND');

    const fromDead = await engine.replay(dead!.id);
    const fromCancelled = await engine.replay(cancelled!.id);
    expect((await engine.get(fromDead.id)).replayOf).toBe(dead!.id);
    expect((await engine.get(fromCancelled.id)).replayOf).toBe(cancelled!.id);
    expect((await engine.get(dead!.id)).state).toBe('dead');
    expect((await engine.get(cancelled!.id)).state).toBe('cancelled');
  });
}
