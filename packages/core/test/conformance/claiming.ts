import { expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, enqueueJobs, type SuiteContext } from './context.ts';

const JOBS = 2000;
const CLAIMERS = 8;
const BATCH = 10;

/** Claims batches and completes them until a claim comes back empty; resolves to every id it was handed. */
async function drain(engine: Engine, name: string, workerId: string): Promise<string[]> {
  const seen: string[] = [];
  for (;;) {
    const jobs = await engine.claim({ name, maxVersion: 1, limit: BATCH, workerId });
    if (jobs.length === 0) return seen;
    for (const job of jobs) {
      expect(job.attempt).toBe(1);
      seen.push(job.id);
    }
    const outcomes = await engine.completeMany(jobs.map(({ id, leaseToken }) => ({ id, leaseToken })));
    expect(outcomes.every((o) => o.ok)).toBe(true);
  }
}

/** One holder: a job is held by at most one unexpired lease. */
export function registerClaimingTests(ctx: SuiteContext): void {
  it(`${CLAIMERS} concurrent claimers over ${JOBS} jobs: each job is delivered exactly once and ends completed`, async () => {
    const name = ctx.jobName('one-holder');
    const clock = new ManualClock();
    const stores = await ctx.clientStores(CLAIMERS);
    const engines = stores.map((store) => ctx.engine({ store, clock }).engine);
    const ids = await enqueueJobs(engines[0]!, name, JOBS);

    const delivered = (await Promise.all(engines.map((engine, i) => drain(engine, name, `claimer-${i}`)))).flat();

    expect(delivered).toHaveLength(JOBS);
    expect(new Set(delivered).size).toBe(JOBS);
    expect(new Set(delivered)).toEqual(new Set(ids));
    const counts = (await engines[0]!.counts()).filter((c) => c.name === name);
    expect(counts).toEqual([{ name, version: 1, state: 'completed', count: JOBS }]);
    // CPU-bound in this process (thousands of claims from 8 connections; the MongoDB wire double runs here too):
    // a heavily shared machine slows it several-fold, and the limit is there to end a hang, not to time it.
  }, 120_000);

  it('a claimed job is not claimable again while its lease is unexpired, from any store', async () => {
    const name = ctx.jobName('leased');
    const clock = new ManualClock();
    const { engine } = ctx.engine({ clock });
    const [other] = await ctx.clientStores(1);
    const { engine: otherEngine } = ctx.engine({ clock, store: other! });
    await engine.enqueue({ name, version: 1, payload: {}, options: { leaseMs: 10_000 } });

    const job = await claimOne(engine, name);
    expect(job.leaseExpiresAtMs).toBe(clock.now().getTime() + 10_000);
    clock.advance(9_999);
    expect(await engine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w2' })).toEqual([]);
    expect(await otherEngine.claim({ name, maxVersion: 1, limit: 10, workerId: 'w3' })).toEqual([]);
    const status = await engine.get(job.id);
    expect(status.state).toBe('active');
    expect(status.attempts).toBe(1);
    expect(status.leaseExpiresAt?.getTime()).toBe(job.leaseExpiresAtMs);
  });

  it('every claim gets a distinct lease token, and a claim batch never repeats a job', async () => {
    const name = ctx.jobName('tokens');
    const { engine, store, clock } = ctx.engine();
    await enqueueJobs(engine, name, 30);
    const first = await engine.claim({ name, maxVersion: 1, limit: 20, workerId: 'w1' });
    const second = await engine.claim({ name, maxVersion: 1, limit: 20, workerId: 'w2' });
    expect(first).toHaveLength(20);
    expect(second).toHaveLength(10);
    const all = [...first, ...second];
    expect(new Set(all.map((j) => j.id)).size).toBe(30);
    expect(first[0]!.leaseToken).not.toBe(second[0]!.leaseToken);
    const record = await store.getJob(second[0]!.id);
    expect(record).toMatchObject({ state: 'active', workerId: 'w2', leaseToken: second[0]!.leaseToken });
    expect(record!.leaseExpiresAt!.getTime()).toBe(clock.now().getTime() + 30_000);
  });

  it('a claim with leaseMs overrides the job’s own lease length', async () => {
    const name = ctx.jobName('lease-override');
    const { engine, clock } = ctx.engine();
    await engine.enqueue({ name, version: 1, payload: {}, options: { leaseMs: 60_000 } });
    const [job] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w1', leaseMs: 5_000 });
    expect(job!.leaseExpiresAtMs).toBe(clock.now().getTime() + 5_000);
    clock.advance(5_001);
    const [again] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w2' });
    expect(again?.id).toBe(job!.id);
    expect(again?.attempt).toBe(2);
  });

  it('a claim hands each job its run time to the millisecond, as stored', async () => {
    const name = ctx.jobName('run-times');
    const { engine, store, clock } = ctx.engine();
    // Milliseconds at both ends of a second and between, in the past (as a claimed job's always is).
    const start = clock.now().getTime() - 86_400_000 - (clock.now().getTime() % 1_000);
    const runAts = [0, 1, 499, 998, 999, 1_000, 1_001, 7_919, 59_999].map((ms) => new Date(start + ms));
    const enqueued = await engine.enqueueMany(
      runAts.map((runAt, n) => ({ name, version: 1, payload: { n }, options: { runAt } })),
    );
    const claimed = await engine.claim({ name, maxVersion: 1, limit: runAts.length, workerId: 'w1' });
    const runAtOf = new Map(claimed.map((job) => [job.id, job.runAtMs]));
    for (const [n, job] of enqueued.entries()) {
      expect(runAtOf.get(job.id)).toBe(runAts[n]!.getTime());
      expect((await store.getJob(job.id))?.runAt).toEqual(runAts[n]);
    }
  });
}
