import { expect, it } from 'vitest';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';

const PRODUCER = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tracestate: 'vendor=opaque-value,other=x',
};

/** The trace context a job is created in: stored with it, returned by every read and claim, carried on. */
export function registerTraceContextTests(ctx: SuiteContext): void {
  it('a job keeps the trace context it was enqueued with: get, claim (with its run time) and a retry’s claim', async () => {
    const name = ctx.jobName('trace');
    const { engine, store, clock } = ctx.engine();
    const [traced, plain] = await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options: { traceContext: PRODUCER } },
      { name, version: 1, payload: { n: 2 } },
    ]);
    expect((await store.getJob(traced!.id))?.traceContext).toEqual(PRODUCER);
    expect((await store.getJob(plain!.id))?.traceContext).toBeNull();

    const claimed = await engine.claim({ name, maxVersion: 1, limit: 2, workerId: 'w1', leaseMs: 1_000 });
    expect(claimed.map((job) => job.traceContext)).toEqual([PRODUCER, undefined]);
    // The run time comes with the claim, so the time a job waited ready can be measured there.
    for (const job of claimed) expect(job.runAtMs).toBe(clock.now().getTime());

    await engine.complete(claimed[1]!);
    await engine.fail(claimed[0]!, { message: 'again' });
    clock.advance(60_000);
    const retried = await claimOne(engine, name);
    expect(retried).toMatchObject({ id: traced!.id, attempt: 2, traceContext: PRODUCER });
    await engine.complete(retried);
  });

  it('a job handed to a waiting claim by its insert, a moved-to job and a replay keep their trace contexts', async () => {
    const name = ctx.jobName('trace-hand');
    const nextName = ctx.jobName('trace-next');
    const { engine, store } = ctx.engine();
    const claim = { name, maxVersion: 1, limit: 1, workerId: 'w1' };
    const handed = await engine.enqueueForClaim(
      { name, version: 1, payload: {}, options: { traceContext: PRODUCER } },
      claim,
    );
    const lease = handed.claimed ?? (await claimOne(engine, name));
    expect(lease.traceContext).toEqual(PRODUCER);

    const step = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01' };
    const moved = await engine.moveTo(lease, {
      name: nextName,
      version: 1,
      payload: {},
      options: { traceContext: step },
    });
    expect((await store.getJob(moved.id))?.traceContext).toEqual(step);
    const next = await claimOne(engine, nextName);
    expect(next.traceContext).toEqual(step);
    await engine.complete(next);

    // A replay is made from the finished job, trace context included (docs/observability.md).
    const replay = await engine.replay(next.id);
    expect((await store.getJob(replay.id))?.traceContext).toEqual(step);
    const replayed = await claimOne(engine, nextName);
    expect(replayed).toMatchObject({ id: replay.id, traceContext: step });
    await engine.complete(replayed);
  });

  it('an empty trace context is none; one that is not string entries within the limits is refused', async () => {
    const name = ctx.jobName('trace-bad');
    const { engine, store } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { traceContext: {} } });
    expect((await store.getJob(id))?.traceContext).toBeNull();
    const bad: unknown[] = [
      { traceparent: 7 },
      { traceparent: '' },
      { traceparent: 'x'.repeat(1025) },
      Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, 'v'])),
      ['00-…'],
    ];
    for (const traceContext of bad) {
      await expectWorkqError(
        engine.enqueue({ name, version: 1, payload: {}, options: { traceContext: traceContext as never } }),
        'VALIDATION',
      );
    }
    const claimed = await claimOne(engine, name);
    expect(claimed.id).toBe(id);
    expect(claimed).not.toHaveProperty('traceContext');
    await engine.complete(claimed);
  });
}
