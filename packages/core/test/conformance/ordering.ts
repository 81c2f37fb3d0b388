import { expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.ts';
import type { EnqueueOptions } from '../../src/engine/options.ts';
import type { JobOrder } from '../../src/index.ts';
import type { ManualClock } from '../support/manual-clock.ts';
import { claimOne, type SuiteContext } from './context.ts';

/** label, priority, runAt in seconds before now; enqueued in this (deliberately unsorted) order. */
const MIXED: [string, number, number][] = [
  ['a', 0, 5],
  ['b', 0, 10],
  ['c', 5, 1],
  ['d', 5, 3],
  ['e', -1, 20],
  ['f', 0, 7],
  ['g', 5, 2],
];

async function enqueueMixed(engine: Engine, clock: ManualClock, name: string, order: JobOrder): Promise<void> {
  const now = clock.now().getTime();
  await engine.enqueueMany(
    MIXED.map(([label, priority, agoS]) => ({
      name,
      version: 1,
      payload: { label },
      options: { priority, order, runAt: new Date(now - agoS * 1000) },
    })),
  );
}

/** Claims one job at a time until none is ready; resolves to their labels in claim order. */
async function claimLabels(engine: Engine, name: string): Promise<string[]> {
  const labels: string[] = [];
  for (;;) {
    const [job] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' });
    if (!job) return labels;
    labels.push((job.payload as { label: string }).label);
  }
}

/** Order: among ready jobs of one type, higher priority first, then by run time, oldest first (fifo) or newest first (lifo). */
export function registerOrderingTests(ctx: SuiteContext): void {
  it('fifo: priority first, then the oldest runAt', async () => {
    const name = ctx.jobName('fifo');
    const { engine, clock } = ctx.engine();
    await enqueueMixed(engine, clock, name, 'fifo');
    expect(await claimLabels(engine, name)).toEqual(['d', 'g', 'c', 'b', 'f', 'a', 'e']);
  });

  it('lifo: priority first, then the newest runAt', async () => {
    const name = ctx.jobName('lifo');
    const { engine, clock } = ctx.engine();
    await enqueueMixed(engine, clock, name, 'lifo');
    expect(await claimLabels(engine, name)).toEqual(['c', 'g', 'd', 'a', 'f', 'b', 'e']);
  });

  it('a batch claim takes the jobs that come first in order', async () => {
    const name = ctx.jobName('batch-order');
    const { engine, clock } = ctx.engine();
    await enqueueMixed(engine, clock, name, 'fifo');
    const batch = await engine.claim({ name, maxVersion: 1, limit: 4, workerId: 'w1' });
    expect(batch.map((j) => (j.payload as { label: string }).label).sort()).toEqual(['b', 'c', 'd', 'g']);
    expect(await claimLabels(engine, name)).toEqual(['f', 'a', 'e']);
  });

  it('a newer job of higher priority runs before an older one of lower priority', async () => {
    const name = ctx.jobName('priority');
    const { engine, clock } = ctx.engine();
    await engine.enqueue({ name, version: 1, payload: { label: 'old-low' }, options: { priority: -5 } });
    clock.advance(60_000);
    await engine.enqueue({ name, version: 1, payload: { label: 'new-high' }, options: { priority: 1_000_000 } });
    await engine.enqueue({ name, version: 1, payload: { label: 'new-default' } });
    expect(await claimLabels(engine, name)).toEqual(['new-high', 'new-default', 'old-low']);
  });

  for (const order of ['fifo', 'lifo'] as const) {
    it(`${order}: ties of priority and runAt are broken by creation order (${order === 'fifo' ? 'oldest' : 'newest'} first), the same way every time`, async () => {
      const name = ctx.jobName(`ties-${order}`);
      const { engine, clock } = ctx.engine();
      const runAt = clock.now();
      const labels = ['t1', 't2', 't3', 't4', 't5'];
      for (const label of labels) {
        await engine.enqueue({ name, version: 1, payload: { label }, options: { order, runAt, priority: 3 } });
      }
      const expected = order === 'fifo' ? labels : [...labels].reverse();
      expect(await claimLabels(engine, name)).toEqual(expected);
    });
  }
  for (const order of ['fifo', 'lifo'] as const) {
    it(`${order}: a job whose lease expired goes back to its place among ready jobs, not behind them`, async () => {
      const name = ctx.jobName(`requeued-${order}`);
      const { engine, clock } = ctx.engine();
      for (const label of ['first', 'second', 'third']) {
        await engine.enqueue({ name, version: 1, payload: { label }, options: { order, leaseMs: 1_000 } });
        clock.advance(10);
      }
      const [held] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'crashed' });
      expect(held?.payload).toEqual({ label: order === 'fifo' ? 'first' : 'third' });
      // A backlog arrives while the job is held; then its worker dies and the lease runs out.
      for (const label of ['later-1', 'later-2']) {
        await engine.enqueue({ name, version: 1, payload: { label }, options: { order } });
        clock.advance(10);
      }
      clock.advance(1_001);
      expect(await claimLabels(engine, name)).toEqual(
        order === 'fifo'
          ? ['first', 'second', 'third', 'later-1', 'later-2']
          : ['later-2', 'later-1', 'third', 'second', 'first'],
      );
    });
  }

  it('a failed attempt retried without backoff keeps its place among ready jobs', async () => {
    const name = ctx.jobName('retried-in-place');
    const { engine, clock } = ctx.engine();
    const options = { backoff: { type: 'fixed' as const, delayMs: 0 }, maxAttempts: 3 };
    for (const label of ['first', 'second', 'third']) {
      await engine.enqueue({ name, version: 1, payload: { label }, options });
      clock.advance(10);
    }
    const [first] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' });
    await engine.fail({ id: first?.id as string, leaseToken: first?.leaseToken as string }, { message: 'flaky' });
    const [again] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1' });
    expect([again?.payload, again?.attempt]).toEqual([{ label: 'first' }, 2]);
  });

  it('a job enqueued for a waiting claim is leased in its insert only when no job that claim takes is ready', async () => {
    const name = ctx.jobName('handed');
    const { engine, clock } = ctx.engine();
    const reader = await ctx.openStore();
    const waiting = { name, minVersion: 1, maxVersion: 2, limit: 5, workerId: 'waiting', leaseMs: 4_000 };
    const enqueueFor = (version: number, options?: EnqueueOptions) =>
      engine.enqueueForClaim({ name, version, payload: { version }, options }, waiting);

    // Nothing ready: a store that can leases the new job to the waiting claim, exactly as a claim would.
    const first = await enqueueFor(2);
    if (!engine.handsOver) {
      expect(first).toEqual({ result: { id: first.result.id, created: true, state: 'ready' }, claimed: null });
      expect(await claimOne(engine, name, 2)).toMatchObject({ id: first.result.id, attempt: 1 });
      return;
    }
    const held = first.claimed;
    expect(held).toMatchObject({ id: first.result.id, name, version: 2, payload: { version: 2 }, attempt: 1 });
    expect(held?.leaseExpiresAtMs).toBe(clock.now().getTime() + 4_000);
    expect(first.result.state).toBe('active');
    expect(await reader.getJob(first.result.id)).toMatchObject({
      state: 'active',
      attempts: 1,
      leaseToken: held?.leaseToken,
      leaseExpiresAt: new Date(held?.leaseExpiresAtMs ?? 0),
      workerId: 'waiting',
    });
    expect(await engine.claim({ ...waiting, workerId: 'other' })).toEqual([]);
    await engine.complete({ id: first.result.id, leaseToken: held?.leaseToken as string });

    // Jobs the claim would not take (a newer version, not due yet) do not hold the next one back.
    const newer = await enqueueFor(3);
    const later = await enqueueFor(1, { delayMs: 60_000 });
    expect([newer.claimed, later.claimed]).toEqual([null, null]);
    expect([newer.result.state, later.result.state]).toEqual(['ready', 'scheduled']);
    const second = await enqueueFor(1);
    expect(second.claimed?.id).toBe(second.result.id);

    // A ready job the claim takes comes first: the new one waits behind it, and the claim is woken for both.
    const ready = await engine.enqueue({ name, version: 1, payload: { version: 1 } });
    const woken: string[] = [];
    const stopListening = engine.onReady((readyName) => woken.push(readyName));
    const behind = await enqueueFor(2);
    stopListening();
    expect(behind).toEqual({ result: { id: behind.result.id, created: true, state: 'ready' }, claimed: null });
    expect(woken).toEqual([name]);
    const claimed = await engine.claim(waiting);
    expect(claimed.map((job) => job.id)).toEqual([ready.id, behind.result.id]);
  });
}
