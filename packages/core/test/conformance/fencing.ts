import { expect, it } from 'vitest';
import type { ClaimedJob, Engine } from '../../src/engine/engine.ts';
import { newJobId } from '../../src/engine/ids.ts';
import type { Store } from '../../src/engine/store.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, enqueueJobs, expectWorkqError, type SuiteContext } from './context.ts';

/**
 * Every fenced operation with `lease`, each expected to fail with
 * `LEASE_LOST` and leave the job record exactly as it was.
 */
async function expectAllFenced(engine: Engine, store: Store, lease: ClaimedJob, nextName: string): Promise<void> {
  const ref = { id: lease.id, leaseToken: lease.leaseToken };
  const before = await store.getJob(lease.id);
  const attempts: [string, () => Promise<unknown>][] = [
    ['complete', () => engine.complete(ref, { stale: true })],
    ['fail', () => engine.fail(ref, { message: 'stale failure' })],
    ['fail (permanent)', () => engine.fail(ref, { message: 'stale failure', permanent: true })],
    ['extend', () => engine.extend(ref, 60_000)],
    ['moveTo', () => engine.moveTo(ref, { name: nextName, version: 1, payload: { stale: true } })],
    ['progress', () => engine.progress(ref, 42)],
    ['updatePayload', () => engine.updatePayload(ref, { name: lease.name, version: 1, payload: { stale: true } })],
  ];
  for (const [what, attempt] of attempts) {
    await expectWorkqError(attempt(), 'LEASE_LOST');
    expect(await store.getJob(lease.id), `${what} with a stale token changed the job`).toEqual(before);
  }
  expect((await engine.list({ name: nextName })).jobs, 'a stale moveTo created a job').toEqual([]);
}

/** The store's own fenced operations with `lease`: each changes nothing and reports it. */
async function expectStoreFenced(store: Store, lease: ClaimedJob, now: Date, nextName: string): Promise<void> {
  const ref = { id: lease.id, leaseToken: lease.leaseToken };
  const before = await store.getJob(lease.id);
  expect(await store.completeJobs([{ ...ref, result: 1 }], now)).toEqual([]);
  expect(await store.releaseJobs([ref], now)).toEqual([]);
  const error = { message: 'stale', attempt: lease.attempt, at: now };
  expect(await store.failJob(ref, { error, retryAt: now }, now)).toBe(false);
  expect(await store.failJob(ref, { error, retryAt: null }, now)).toBe(false);
  expect(await store.snoozeJob(ref, new Date(now.getTime() + 60_000), now)).toBe(false);
  expect(await store.extendLease(ref, new Date(now.getTime() + 60_000), now)).toBeNull();
  expect(await store.recordProgress(ref, 7, now)).toBe(false);
  expect(await store.updatePayload(ref, { payload: { stale: true }, version: 1 }, now)).toBe(false);
  const next = {
    id: newJobId(),
    name: nextName,
    version: 1,
    payload: {},
    priority: 0,
    order: 'fifo' as const,
    runAt: now,
    createdAt: now,
    maxAttempts: 1,
    backoff: { type: 'fixed' as const, delayMs: 0 },
    leaseMs: 1000,
    idempotencyKey: null,
    idempotencyExpiresAt: null,
    debounceKey: null,
    replayOf: null,
    traceContext: null,
  };
  expect(await store.moveJob(ref, next, now)).toBeNull();
  expect(await store.getJob(next.id)).toBeNull();
  expect(await store.getJob(lease.id)).toEqual(before);
}

/** Fencing: every lease has a unique token; a stale token fails with LEASE_LOST and changes nothing. */
export function registerFencingTests(ctx: SuiteContext): void {
  it('an expired lease is delivered again; the stale token’s complete, fail, extend, moveTo, progress and updatePayload are LEASE_LOST and change nothing', async () => {
    const name = ctx.jobName('fencing');
    const { engine, store, clock } = ctx.engine();
    await engine.enqueue({ name, version: 1, payload: { a: 1 }, options: { leaseMs: 1_000, maxAttempts: 5 } });
    const stale = await claimOne(engine, name);
    clock.advance(1_001);

    const fresh = await claimOne(engine, name);
    expect(fresh.id).toBe(stale.id);
    expect(fresh.attempt).toBe(2);
    expect(fresh.leaseToken).not.toBe(stale.leaseToken);

    await expectAllFenced(engine, store, stale, ctx.jobName('fencing-next'));
    await expectStoreFenced(store, stale, clock.now(), ctx.jobName('fencing-next'));

    await engine.progress(fresh, 50);
    await engine.complete(fresh, { ok: true });
    const status = await engine.get(fresh.id);
    expect(status).toMatchObject({ state: 'completed', attempts: 2, progress: 50, result: { ok: true } });
  });

  it('an expired lease fences its holder even before anyone claims the job again', async () => {
    const name = ctx.jobName('expired-unclaimed');
    const { engine, store, clock } = ctx.engine();
    await engine.enqueue({ name, version: 1, payload: {}, options: { leaseMs: 1_000 } });
    const lease = await claimOne(engine, name);
    clock.advance(1_000);
    await expectStoreFenced(store, lease, clock.now(), ctx.jobName('expired-next'));
    await expectWorkqError(engine.complete(lease), 'LEASE_LOST');
    await expectWorkqError(engine.progress(lease, 10), 'LEASE_LOST');
    expect((await store.getJob(lease.id))?.state).toBe('active');
  });

  it('a token only fences its own job: a valid token with another job’s id is LEASE_LOST', async () => {
    const name = ctx.jobName('cross-token');
    const { engine, store } = ctx.engine();
    await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 } },
      { name, version: 1, payload: { n: 2 } },
    ]);
    const a = await claimOne(engine, name);
    const b = await claimOne(engine, name);
    const forged = { ...b, leaseToken: a.leaseToken };
    await expectAllFenced(engine, store, forged, ctx.jobName('cross-next'));
    await engine.complete(b);
    await engine.complete(a);
  });

  it('a cancelled active job’s token gets LEASE_LOST and the job stays cancelled', async () => {
    const name = ctx.jobName('cancel-active');
    const { engine, store } = ctx.engine();
    const { id } = await engine.enqueue({ name, version: 1, payload: {} });
    const lease = await claimOne(engine, name);
    expect(await engine.cancel(id)).toBe(true);
    const cancelled = await store.getJob(id);
    expect(cancelled).toMatchObject({ state: 'cancelled', leaseToken: null });

    await expectAllFenced(engine, store, lease, ctx.jobName('cancel-next'));
    expect((await engine.get(id)).state).toBe('cancelled');
  });

  it('completeMany fails only the items whose lease was lost', async () => {
    const name = ctx.jobName('complete-many');
    const { engine, clock } = ctx.engine();
    await engine.enqueueMany([
      { name, version: 1, payload: { n: 1 }, options: { leaseMs: 1_000 } },
      { name, version: 1, payload: { n: 2 }, options: { leaseMs: 10_000 } },
    ]);
    const jobs = await engine.claim({ name, maxVersion: 1, limit: 2, workerId: 'w1' });
    expect(jobs).toHaveLength(2);
    clock.advance(5_000);
    const short = jobs.find((j) => j.leaseMs === 1_000)!;
    const long = jobs.find((j) => j.leaseMs === 10_000)!;
    const outcomes = await engine.completeMany(jobs);
    expect(outcomes).toEqual(jobs.map((j) => ({ id: j.id, ok: j.id === long.id, repeated: false })));
    expect((await engine.get(long.id)).state).toBe('completed');
    expect((await engine.get(short.id)).state).toBe('active');
  });

  it('one batch of acks from two claims completes each job under its own lease with its own result', async () => {
    const name = ctx.jobName('complete-two-claims');
    const { engine, store } = ctx.engine();
    await engine.enqueueMany([1, 2, 3, 4].map((n) => ({ name, version: 1, payload: { n } })));
    const [a, b] = await engine.claim({ name, maxVersion: 1, limit: 2, workerId: 'w1' });
    const [c, d] = await engine.claim({ name, maxVersion: 1, limit: 2, workerId: 'w2' });
    expect(a && b && c && d).toBeTruthy();
    const outcomes = await engine.completeMany([
      { ...a!, result: 'a' },
      { ...c!, result: { c: true } },
      { ...b! },
      { id: d!.id, leaseToken: a!.leaseToken, result: 'forged' },
    ]);
    expect(outcomes).toEqual([
      { id: a!.id, ok: true, repeated: false },
      { id: c!.id, ok: true, repeated: false },
      { id: b!.id, ok: true, repeated: false },
      { id: d!.id, ok: false, repeated: false },
    ]);
    expect(await store.getJob(a!.id)).toMatchObject({ state: 'completed', result: 'a', leaseToken: a!.leaseToken });
    expect(await store.getJob(c!.id)).toMatchObject({
      state: 'completed',
      result: { c: true },
      leaseToken: c!.leaseToken,
    });
    expect(await store.getJob(b!.id)).toMatchObject({ state: 'completed', result: null, leaseToken: b!.leaseToken });
    expect(await store.getJob(d!.id)).toMatchObject({ state: 'active', leaseToken: d!.leaseToken });
  });

  it('one batch of acks carrying a job’s expired lease and its current one completes it for the current one only', async () => {
    const name = ctx.jobName('complete-superseded');
    const { engine, store, clock } = ctx.engine();
    await engine.enqueue({ name, version: 1, payload: {}, options: { leaseMs: 1_000, maxAttempts: 5 } });
    const stale = await claimOne(engine, name);
    clock.advance(1_001);
    const fresh = await claimOne(engine, name);
    expect(fresh.attempt).toBe(2);

    // As a server merges concurrent workers' acks into one store call: the superseded lease's ack, in either order.
    const outcomes = await engine.completeMany([
      { ...stale, result: 'stale' },
      { ...fresh, result: 'fresh' },
    ]);
    expect(outcomes).toEqual([
      { id: stale.id, ok: false, repeated: false },
      { id: fresh.id, ok: true, repeated: false },
    ]);
    expect(await store.getJob(fresh.id)).toMatchObject({ state: 'completed', leaseToken: fresh.leaseToken });
    expect(await engine.completeMany([fresh, stale])).toEqual([
      { id: fresh.id, ok: false, repeated: true },
      { id: stale.id, ok: false, repeated: false },
    ]);
  });

  it('an expired lease raced by concurrent claimers on separate stores is delivered to exactly one', async () => {
    const name = ctx.jobName('expired-race');
    const clock = new ManualClock();
    const engines = (await ctx.clientStores(8)).map((store) => ctx.engine({ store, clock }).engine);
    const { id } = await engines[0]!.enqueue({ name, version: 1, payload: {}, options: { leaseMs: 1_000 } });
    await claimOne(engines[0]!, name);
    clock.advance(1_000);
    const claims = await Promise.all(
      engines.map((engine, i) => engine.claim({ name, maxVersion: 1, limit: 5, workerId: `racer-${i}` })),
    );
    const winners = claims.flat();
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ id, attempt: 2 });
    expect(await engines[0]!.get(id)).toMatchObject({ state: 'active', attempts: 2 });
  });

  it('racing complete and cancel on one active job: exactly one of them wins, and the state shows which', async () => {
    const name = ctx.jobName('complete-cancel-race');
    const clock = new ManualClock();
    const [a, b] = (await ctx.clientStores(2)).map((store) => ctx.engine({ store, clock }).engine);
    await enqueueJobs(a!, name, 20);
    const leases = await a!.claim({ name, maxVersion: 1, limit: 20, workerId: 'w1' });
    expect(leases).toHaveLength(20);
    const races = await Promise.all(
      leases.map((lease) => Promise.allSettled([a!.complete(lease, 'done'), b!.cancel(lease.id)])),
    );
    for (const [index, [completed, cancelled]] of races.entries()) {
      const completedOk = completed.status === 'fulfilled';
      if (!completedOk) expect((completed.reason as { code?: string }).code).toBe('LEASE_LOST');
      expect(cancelled.status).toBe('fulfilled');
      const cancelledOk = (cancelled as PromiseFulfilledResult<boolean>).value;
      expect(completedOk !== cancelledOk, 'exactly one of complete and cancel wins').toBe(true);
      const status = await a!.get(leases[index]!.id);
      expect(status.state).toBe(completedOk ? 'completed' : 'cancelled');
    }
  });

  it('released jobs are ready again in their place with their attempt not counted; a lost lease releases nothing', async () => {
    const name = ctx.jobName('release');
    const { engine, store, clock } = ctx.engine();
    const options = { leaseMs: 10_000, maxAttempts: 1 };
    const [first, second, third] = await engine.enqueueMany(
      [1, 2, 3].map((n) => ({ name, version: 1, payload: { n }, options })),
    );
    const held = await engine.claim({ name, maxVersion: 1, limit: 2, workerId: 'gone' });
    expect(held.map((job) => job.id)).toEqual([first!.id, second!.id]);
    const [a, b] = held as [ClaimedJob, ClaimedJob];

    expect(await engine.release([{ ...a, leaseToken: 'forged' }])).toEqual([]);
    expect((await store.getJob(a.id))?.state).toBe('active');
    expect((await engine.release([a, b])).sort()).toEqual([a.id, b.id].sort());
    expect(await engine.release([a])).toEqual([]);
    expect(await store.getJob(a.id)).toMatchObject({ state: 'waiting', attempts: 0, leaseToken: null });
    await expectWorkqError(engine.complete(a), 'LEASE_LOST');

    // With one attempt allowed, each still runs: the released claim used none of it.
    const again = await engine.claim({ name, maxVersion: 1, limit: 3, workerId: 'w2' });
    expect(again.map((job) => [job.id, job.attempt])).toEqual([
      [first!.id, 1],
      [second!.id, 1],
      [third!.id, 1],
    ]);
    clock.advance(10_001);
    expect(await engine.release(again)).toEqual([]);
    await engine.sweepExpiredLeases();
    expect((await store.getJob(first!.id))?.state).toBe('dead');
  });
}
