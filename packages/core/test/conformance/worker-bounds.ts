import { expect, it } from 'vitest';
import { WORKER_REGISTRY_BOUNDS, type WorkerPresence } from '../../src/engine/store.ts';
import { ManualClock } from '../support/manual-clock.ts';
import type { SuiteContext } from './context.ts';

/** Later than any time a test records, and a time every store keeps: deleting all before it empties the registry. */
const END_OF_TIME = new Date(Date.UTC(9999, 11, 31));

/** The worker registry stays bounded: rows not seen for a day are pruned, and it holds at most so many rows. */
export function registerWorkerBoundTests(ctx: SuiteContext): void {
  const presence = (id: string, seenAt: Date): WorkerPresence => ({
    id,
    host: 'h',
    name: 'bounds',
    minVersion: 1,
    maxVersion: 1,
    pid: null,
    startedAt: null,
    seenAt,
  });
  const listedIds = async () => (await ctx.store.listWorkers(new Date(0))).map((worker) => worker.id).sort();

  it('the pruner deletes the workers not seen for WORKER_REGISTRY_BOUNDS.retentionMs, and only those', async () => {
    const clock = new ManualClock(new Date('2031-01-01T00:00:00.000Z'));
    const { engine, store } = ctx.engine({ clock });
    const room = { maxWorkers: WORKER_REGISTRY_BOUNDS.maxWorkers, idleBefore: new Date(0) };
    const [gone, kept, fresh] = ['gone', 'kept', 'fresh'].map((topic) => ctx.jobName(`worker-${topic}`)) as [
      string,
      string,
      string,
    ];
    expect(await store.recordWorker(presence(gone, clock.now()), room)).toBe(true);
    clock.advance(1);
    expect(await store.recordWorker(presence(kept, clock.now()), room)).toBe(true);
    clock.advance(WORKER_REGISTRY_BOUNDS.retentionMs);
    expect(await store.recordWorker(presence(fresh, clock.now()), room)).toBe(true);

    expect(await engine.pruneWorkers()).toBeGreaterThanOrEqual(1);
    const listed = await listedIds();
    expect(listed).not.toContain(gone);
    expect(listed).toEqual(expect.arrayContaining([kept, fresh]));
    clock.advance(1);
    await engine.pruneWorkers();
    expect(await listedIds()).not.toContain(kept);
    expect(await listedIds()).toContain(fresh);
    expect(await store.pruneWorkers(END_OF_TIME)).toBeGreaterThanOrEqual(1);
    expect(await listedIds()).toEqual([]);
  });

  it('a full registry refuses new workers unless an idle one makes room; known workers are always recorded', async () => {
    const { store } = ctx.engine();
    await store.pruneWorkers(END_OF_TIME);
    const t0 = new Date('2031-02-01T00:00:00.000Z').getTime();
    const at = (ms: number) => new Date(t0 + ms);
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((topic) => ctx.jobName(`worker-${topic}`)) as string[];
    const live = { maxWorkers: 3, idleBefore: at(0) };
    expect(await store.recordWorker(presence(a!, at(1_000)), live)).toBe(true);
    expect(await store.recordWorker(presence(b!, at(2_000)), live)).toBe(true);
    expect(await store.recordWorker(presence(c!, at(3_000)), live)).toBe(true);
    // Full of workers seen since `idleBefore`: a new id is refused and nothing changes.
    expect(await store.recordWorker(presence(d!, at(4_000)), live)).toBe(false);
    expect(await listedIds()).toEqual([a, b, c].sort());
    // A known worker is recorded even so.
    expect(await store.recordWorker(presence(a!, at(5_000)), live)).toBe(true);
    expect((await store.listWorkers(at(5_000))).map((worker) => worker.id)).toEqual([a]);

    // `b` (seen at 2 s) is the idlest row seen before 2.5 s: it gives its place to `d`.
    const idle = { maxWorkers: 3, idleBefore: at(2_500) };
    expect(await store.recordWorker(presence(d!, at(6_000)), idle)).toBe(true);
    expect(await listedIds()).toEqual([a, c, d].sort());
    // No row was last seen before 2.5 s any more: `e` is refused.
    expect(await store.recordWorker(presence(e!, at(7_000)), idle)).toBe(false);
    expect(await listedIds()).toEqual([a, c, d].sort());
    await store.pruneWorkers(END_OF_TIME);
  });
}
