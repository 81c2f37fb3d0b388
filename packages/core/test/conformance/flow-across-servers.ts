import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ClaimInput, Engine } from '../../src/engine/engine.ts';
import type { Store } from '../../src/engine/store.ts';
import { enqueueJobs, type SuiteContext, type TestEngine } from './context.ts';

/**
 * Two servers on one store: `a` changes the settings, `b` claims. `b` keeps what it read of the settings for a
 * minute by a clock that does not move, so its copy is certainly stale: only the store's claim can honour a
 * change made through `a`. `a` keeps its copy for no time at all, as little as any server waits on a change.
 */
async function twoServers(ctx: SuiteContext): Promise<{ a: TestEngine; b: TestEngine }> {
  const [storeA, storeB] = (await ctx.clientStores(2)) as [Store, Store];
  return {
    a: ctx.engine({ store: storeA, settingsRefreshMs: 0 }),
    b: ctx.engine({ store: storeB, settingsRefreshMs: 60_000 }),
  };
}

function claimOf(name: string, limit: number, workerId = 'b'): ClaimInput {
  return { name, maxVersion: 1, limit, workerId };
}

async function activeJobs(store: Store, name: string) {
  return store.listJobs({ name, states: ['active'], limit: 1000 });
}

/** Claims of `name` on `engine`, `count` at once, each of up to `limit`; resolves to every job they leased. */
async function claimAtOnce(engine: Engine, name: string, count: number, limit: number) {
  const claims = await Promise.all(
    Array.from({ length: count }, (_, i) => engine.claim(claimOf(name, limit, `b${i}`))),
  );
  return claims.flat();
}

/**
 * Flow control across servers: a pause or a limit set through one server holds for the very next claim on
 * another, with both cores kept busy by other processes (a loaded machine is where a server's copy of the
 * settings lags furthest behind the store).
 */
export function registerFlowAcrossServerTests(ctx: SuiteContext): void {
  const busy: ChildProcess[] = [];
  beforeAll(() => {
    for (let i = 0; i < 2; i++) busy.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  });
  afterAll(() => {
    for (const child of busy.splice(0)) if (child.pid !== undefined) process.kill(child.pid);
  });

  it('a pause through one server stops the next claim and handoff on another; resume frees them there at once', async () => {
    const name = ctx.jobName('pause-across');
    const { a, b } = await twoServers(ctx);
    await enqueueJobs(a.engine, name, 1);
    expect(await b.engine.claim(claimOf(name, 5))).toHaveLength(1);

    await a.engine.pause(name);
    // Nothing is ready: a store that hands a new job to a waiting claim would hand this one over, unpaused.
    const handed = await b.engine.enqueueForClaim({ name, version: 1, payload: { n: 1 } }, claimOf(name, 1));
    expect(handed.claimed).toBeNull();
    expect(await b.engine.claim(claimOf(name, 5))).toEqual([]);
    expect(await b.engine.claim(claimOf(name, 5))).toEqual([]);

    // `b` has now read the pause: a resume through `a` must reach its next claim all the same.
    await a.engine.resume(name);
    expect(await b.engine.claim(claimOf(name, 5))).toHaveLength(1);
  });

  it('concurrency 1 set through one server holds the next claims on another, and clearing it frees them', async () => {
    const name = ctx.jobName('concurrency-across');
    const { a, b } = await twoServers(ctx);
    await enqueueJobs(a.engine, name, 6);
    const [first] = await b.engine.claim(claimOf(name, 1));
    await b.engine.complete({ id: first!.id, leaseToken: first!.leaseToken });

    await a.engine.setLimits(name, { concurrency: 1 });
    expect(await claimAtOnce(b.engine, name, 4, 3)).toHaveLength(1);
    expect(await activeJobs(b.store, name)).toHaveLength(1);
    expect(await b.engine.claim(claimOf(name, 3))).toEqual([]);

    await a.engine.setLimits(name, { concurrency: null });
    expect(await b.engine.claim(claimOf(name, 5))).toHaveLength(4);
  });

  it('groupConcurrency 1 set through one server holds the next claims on another to one job per group', async () => {
    const name = ctx.jobName('groups-across');
    const { a, b } = await twoServers(ctx);
    expect(await b.engine.claim(claimOf(name, 1))).toEqual([]);

    for (const group of ['g1', 'g2']) await enqueueJobs(a.engine, name, 3, { group });
    await a.engine.setLimits(name, { groupConcurrency: 1 });
    const jobs = await claimAtOnce(b.engine, name, 3, 6);
    expect(jobs).toHaveLength(2);
    const active = await activeJobs(b.store, name);
    expect(active.map((job) => job.group).sort()).toEqual(['g1', 'g2']);
  });

  it('rateLimit 10 per 1000 ms set through one server holds the next claims on another in every window', async () => {
    const name = ctx.jobName('rate-across');
    const { a, b } = await twoServers(ctx);
    await enqueueJobs(a.engine, name, 40);
    expect(await b.engine.claim(claimOf(name, 1))).toHaveLength(1);

    await a.engine.setLimits(name, { rateLimit: { max: 10, perMs: 1000 } });
    // `b`'s clock stands still: every claim below starts in one window until it moves.
    expect(await claimAtOnce(b.engine, name, 4, 5)).toHaveLength(10);
    expect(await claimAtOnce(b.engine, name, 2, 5)).toEqual([]);
    b.clock.advance(999);
    expect(await b.engine.claim(claimOf(name, 5))).toEqual([]);
    b.clock.advance(1);
    expect(await claimAtOnce(b.engine, name, 4, 5)).toHaveLength(10);
  });
}
