import { expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.ts';
import type { Store } from '../../src/engine/store.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { enqueueJobs, type SuiteContext } from './context.ts';
import { flowClaimers } from './flow-control.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Claims up to `limit` jobs of `name` and completes them; resolves to their ids in claim order. */
async function claimAndComplete(engine: Engine, name: string, limit: number): Promise<string[]> {
  const jobs = await engine.claim({ name, maxVersion: 1, limit, workerId: 'w1' });
  await engine.completeMany(jobs.map(({ id, leaseToken }) => ({ id, leaseToken })));
  return jobs.map((job) => job.id);
}

async function activeGroups(store: Store, name: string): Promise<Map<string | null, number>> {
  const counts = new Map<string | null, number>();
  for (const job of await store.listJobs({ name, states: ['active'], limit: 1000 })) {
    counts.set(job.group, (counts.get(job.group) ?? 0) + 1);
  }
  return counts;
}

/** Flow control (issue 32): groups take turns, and `groupConcurrency` caps each group's active jobs. */
export function registerFlowGroupTests(ctx: SuiteContext): void {
  it('groupConcurrency 1: 8 claimers on separate connections never run two jobs of one group at once', async () => {
    const name = ctx.jobName('groups-limit');
    const clock = new ManualClock();
    const stores = await flowClaimers(ctx, 8);
    const engines = stores.map((store) => ctx.engine({ store, clock }).engine);
    const groups = ['g1', 'g2', 'g3', 'g4', 'g5'];
    for (const group of groups) await enqueueJobs(engines[0] as Engine, name, 16, { group });
    await (engines[0] as Engine).setLimits(name, { groupConcurrency: 1 });
    let most = 0;
    let claims = 0;
    await Promise.all(
      engines.map(async (engine, i) => {
        for (let idle = 0; idle < 30; ) {
          const jobs = await engine.claim({ name, maxVersion: 1, limit: 1 + (i % 3), workerId: `c${i}` });
          claims += 1;
          for (const count of (await activeGroups(stores[i] as Store, name)).values()) most = Math.max(most, count);
          if (jobs.length === 0) {
            idle += 1;
            await sleep(2);
            continue;
          }
          idle = 0;
          await sleep(Math.random() * 5);
          await engine.completeMany(jobs.map(({ id, leaseToken }) => ({ id, leaseToken })));
        }
      }),
    );
    expect(claims).toBeGreaterThan(80 / 3);
    expect(most).toBe(1);
    const completed = await ctx.store.listJobs({ name, states: ['completed'], limit: 1000 });
    expect(completed).toHaveLength(80);
    // CPU-bound in this process (thousands of claims from 8 connections; the MongoDB wire double runs here too):
    // a heavily shared machine slows it several-fold, and the limit is there to end a hang, not to time it.
  }, 120_000);

  it('a grouped type gives jobs without a group one turn among the groups', async () => {
    const name = ctx.jobName('groups-none');
    const { engine } = ctx.engine();
    await enqueueJobs(engine, name, 50, { group: 'a' });
    const plain = await enqueueJobs(engine, name, 3);
    const started = [
      ...(await claimAndComplete(engine, name, 2)),
      ...(await claimAndComplete(engine, name, 2)),
      ...(await claimAndComplete(engine, name, 2)),
    ];
    expect(plain.every((id) => started.includes(id))).toBe(true);
    expect((await engine.get(plain[0] as string)).state).toBe('completed');
  });

  it('a grouped claim starts a delayed job once it is due, in the turn of its group', async () => {
    const name = ctx.jobName('groups-delayed');
    const clock = new ManualClock();
    const { engine } = ctx.engine({ clock });
    const early = await enqueueJobs(engine, name, 3, { group: 'a' });
    const [late] = await enqueueJobs(engine, name, 1, { group: 'b', delayMs: 60_000 });
    await engine.setLimits(name, { groupConcurrency: 1 });
    expect(await claimAndComplete(engine, name, 2)).toEqual([early[0]]);
    clock.advance(60_000);
    expect(new Set(await claimAndComplete(engine, name, 2))).toEqual(new Set([early[1], late]));
  });

  it('each group with ready jobs gets one turn per round, a group that gains jobs midway included', async () => {
    const name = ctx.jobName('groups-round');
    const { engine } = ctx.engine();
    const groupOf = new Map<string, string>();
    const enqueueGroup = async (group: string) => {
      for (const id of await enqueueJobs(engine, name, 6, { group })) groupOf.set(id, group);
    };
    for (const group of ['b', 'c', 'd']) await enqueueGroup(group);
    const started: string[] = [];
    for (let claim = 0; claim < 4; claim++) started.push(...(await claimAndComplete(engine, name, 1)));
    // A group that sorts before every other arrives after the round has moved past the start.
    await enqueueGroup('a');
    for (let claim = 0; claim < 12; claim++) started.push(...(await claimAndComplete(engine, name, 1)));
    const groups = started.map((id) => groupOf.get(id));
    expect(groups).toHaveLength(16);
    for (let at = 0; at + 3 <= 4; at++) expect(new Set(groups.slice(at, at + 3)).size).toBe(3);
    for (let at = 4; at + 4 <= groups.length; at++) expect(new Set(groups.slice(at, at + 4)).size).toBe(4);
  });

  it('a 10-job group enqueued after a 10,000-job group has all its jobs started within the first 100 starts', async () => {
    const name = ctx.jobName('groups-fair');
    const { engine } = ctx.engine();
    await enqueueJobs(engine, name, 10_000, { group: 'big' });
    const small = await enqueueJobs(engine, name, 10, { group: 'small', priority: 0 });
    const started: string[] = [];
    // One job per claim: the turns between claims, not the rounds within a batch, must let the small group in.
    for (let claim = 0; claim < 100; claim++) started.push(...(await claimAndComplete(engine, name, 1)));
    expect(started).toHaveLength(100);
    const first100 = new Set(started);
    expect(small.filter((id) => first100.has(id))).toEqual(small);
    // Within a group, jobs keep their order.
    expect(started.filter((id) => small.includes(id))).toEqual(small);
    const [settings] = await ctx.store.listQueueSettings(name);
    expect(settings?.grouped).toBe(true);
  }, 120_000);
}
