import { expect, it } from 'vitest';
import { newJobId } from '../../src/engine/ids.ts';
import type { NewJob } from '../../src/engine/store.ts';
import { claimOne, type SuiteContext } from './context.ts';

/** An acknowledged enqueue is durable, and a dead worker loses only its lease. */
export function registerDurabilityTests(ctx: SuiteContext): void {
  it('enqueue and enqueueMany resolve only once the jobs are readable from another store instance', async () => {
    const name = ctx.jobName('durable');
    const { engine } = ctx.engine();
    const reader = await ctx.openStore();

    const one = await engine.enqueue({ name, version: 1, payload: { text: 'héllo', nested: { list: [1, 2] } } });
    expect(await reader.getJob(one.id)).toMatchObject({
      id: one.id,
      name,
      version: 1,
      state: 'waiting',
      attempts: 0,
      payload: { text: 'héllo', nested: { list: [1, 2] } },
    });

    const many = await engine.enqueueMany(
      Array.from({ length: 25 }, (_, n) => ({ name, version: 1, payload: { n }, options: { priority: n } })),
    );
    const listed = await reader.listJobs({ name, limit: 100 });
    expect(listed.map((j) => j.id).sort()).toEqual([one.id, ...many.map((r) => r.id)].sort());
    for (const [n, result] of many.entries()) {
      expect(await reader.getJob(result.id)).toMatchObject({ payload: { n }, priority: n });
    }
  });

  it('insertJobs and moveJob report each new job exactly as another store instance reads it back', async () => {
    const name = ctx.jobName('inserted');
    const now = new Date('2031-02-03T04:05:06.789Z');
    const reader = await ctx.openStore();
    const fresh = (n: number, idempotencyKey: string | null): NewJob => ({
      id: newJobId(),
      name,
      version: 2,
      payload: { n, text: 'ünï 🎉', nested: { list: [1, null, { deep: true }] } },
      priority: n,
      order: n % 2 === 0 ? 'fifo' : 'lifo',
      runAt: new Date(now.getTime() + n),
      createdAt: now,
      maxAttempts: 3,
      backoff: { type: 'exponential', delayMs: 50, maxDelayMs: 500 },
      leaseMs: 1_234,
      idempotencyKey,
      idempotencyExpiresAt: null,
      debounceKey: null,
      replayOf: null,
      traceContext: null,
    });
    const outcomes = await ctx.store.insertJobs([fresh(1, null), fresh(2, 'key-2'), fresh(3, null)]);
    for (const { job, created } of outcomes) {
      expect(created).toBe(true);
      expect(await reader.getJob(job!.id)).toEqual(job);
    }
    // Jobs enqueued together usually share every setting but their payload and key; a store may send those once.
    const alike = (n: number, idempotencyKey: string | null): NewJob => ({
      ...fresh(5, idempotencyKey),
      id: newJobId(),
      payload: { n },
      replayOf: 'replayed-job',
    });
    for (const batch of [
      [alike(1, null), alike(2, null)],
      [alike(3, 'key-alike'), alike(4, null)],
    ]) {
      for (const { job, created } of await ctx.store.insertJobs(batch)) {
        expect(created).toBe(true);
        expect(await reader.getJob(job!.id)).toEqual(job);
      }
    }
    const [held] = await ctx.store.claimJobs({
      name,
      minVersion: 1,
      maxVersion: 2,
      limit: 1,
      leaseToken: 'token-inserted',
      workerId: 'w',
      leaseMs: null,
      now: new Date(now.getTime() + 10),
    });
    const moved = await ctx.store.moveJob(
      { id: held!.id, leaseToken: held!.leaseToken as string },
      fresh(4, null),
      new Date(now.getTime() + 20),
    );
    expect(await reader.getJob(moved!.job!.id)).toEqual(moved!.job);
  });

  it('a worker that dies loses only its lease: the job is delivered again after leaseMs and the attempt counts', async () => {
    const name = ctx.jobName('dead-worker');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: { x: 1 }, options: { leaseMs: 2_000 } });
    const first = await claimOne(engine, name);
    expect(first).toMatchObject({ id, attempt: 1, payload: { x: 1 } });

    clock.advance(1_999);
    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w2' })).toEqual([]);
    clock.advance(1);
    const second = await claimOne(engine, name);
    expect(second).toMatchObject({ id, attempt: 2, payload: { x: 1 } });
    const status = await engine.get(id);
    expect(status).toMatchObject({ state: 'active', attempts: 2 });
    expect(status.error).toMatchObject({ code: 'LEASE_EXPIRED', attempt: 1 });

    await engine.complete(second);
    expect((await engine.get(id)).state).toBe('completed');
  });

  it('a lost lease that uses up maxAttempts makes the job dead with error LEASE_EXPIRED', async () => {
    const name = ctx.jobName('lease-dead');
    const { engine, clock } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {}, options: { leaseMs: 1_000, maxAttempts: 2 } });
    await claimOne(engine, name);
    clock.advance(1_000);
    expect((await claimOne(engine, name)).attempt).toBe(2);
    clock.advance(1_000);

    expect(await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w3' })).toEqual([]);
    const status = await engine.get(id);
    expect(status).toMatchObject({ state: 'dead', attempts: 2 });
    expect(status.error).toMatchObject({ code: 'LEASE_EXPIRED', attempt: 2 });
    expect(status.finishedAt).toEqual(clock.now());
    expect((await engine.list({ name, state: 'dead' })).jobs.map((j) => j.id)).toEqual([id]);
  });

  it('the lease sweep through the store requeues and kills by attempts, and leaves unexpired leases alone', async () => {
    const name = ctx.jobName('sweep');
    const { engine, store, clock } = ctx.engine();
    const enqueuedAt = clock.now();
    const [retry, last, held] = await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options: { leaseMs: 1_000, maxAttempts: 3 } },
      { name, version: 1, payload: { n: 2 }, options: { leaseMs: 1_000, maxAttempts: 1 } },
      { name, version: 1, payload: { n: 3 }, options: { leaseMs: 60_000, maxAttempts: 1 } },
    ]);
    expect(await engine.claim({ name, maxVersion: 1, limit: 3, workerId: 'w1' })).toHaveLength(3);
    const now = clock.advance(1_001);
    const error = { message: 'lease expired', code: 'LEASE_EXPIRED', at: now };

    const swept = await store.requeueExpiredLeases(now, error);
    // It names what it swept (events are made from it), each job once; other tests' jobs may be swept too.
    const ours = swept.filter((job) => job.name === name).sort((a, b) => a.id.localeCompare(b.id));
    expect(ours).toEqual(
      [
        { id: retry!.id, name, version: 1, attempt: 1, dead: false },
        { id: last!.id, name, version: 1, attempt: 1, dead: true },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    expect((await store.requeueExpiredLeases(now, error)).filter((job) => job.name === name)).toEqual([]);
    expect(await store.getJob(retry!.id)).toMatchObject({
      state: 'waiting',
      runAt: enqueuedAt, // in its place, not behind the jobs enqueued since
      leaseToken: null,
      attempts: 1,
      error: { message: 'lease expired', code: 'LEASE_EXPIRED', attempt: 1 },
    });
    expect(await store.getJob(last!.id)).toMatchObject({ state: 'dead', finishedAt: now, leaseToken: null });
    expect(await store.getJob(held!.id)).toMatchObject({ state: 'active', attempts: 1, error: null });
  });
}
