import { expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.ts';
import { enqueueJobs, expectWorkqError, type SuiteContext } from './context.ts';

const backoff = { type: 'fixed', delayMs: 5_000 } as const;

/** Claims up to `limit` jobs of `name`; resolves to the leases. */
function claim(engine: Engine, name: string, limit: number) {
  return engine.claim({ name, maxVersion: 1, limit, workerId: 'w1' });
}

/** The groups' jobs, `count` each, enqueued group by group with a fixed 5 s backoff and 3 attempts. */
async function enqueueGroups(engine: Engine, name: string, groups: readonly string[], count: number) {
  const ids = new Map<string, string[]>();
  for (const group of groups)
    ids.set(group, await enqueueJobs(engine, name, count, { group, backoff, maxAttempts: 3 }));
  return ids;
}

/** Strict order per group (`groupOrder: 'strict'`, pg-boss `key_strict_fifo`): a failed job holds its group. */
export function registerFlowStrictOrderTests(ctx: SuiteContext): void {
  it("groupOrder 'strict': a failed first job holds its group's second job until it completes after its retry; other groups flow", async () => {
    const name = ctx.jobName('strict-retry');
    const { engine, clock } = ctx.engine();
    const ids = await enqueueGroups(engine, name, ['a', 'b'], 2);
    const [a1, a2] = ids.get('a') as string[];
    const [b1, b2] = ids.get('b') as string[];
    await engine.setLimits(name, { groupConcurrency: 1, groupOrder: 'strict' });

    const first = await claim(engine, name, 5);
    expect(new Set(first.map((job) => job.id))).toEqual(new Set([a1, b1]));
    const leaseOf = (id: string) => first.find((job) => job.id === id) as (typeof first)[number];
    expect((await engine.fail(leaseOf(a1 as string), { message: 'try again' })).state).toBe('scheduled');
    await engine.complete(leaseOf(b1 as string));

    // a1 waits out its backoff: a2 is held, b2 runs.
    expect((await claim(engine, name, 5)).map((job) => job.id)).toEqual([b2]);
    expect(await claim(engine, name, 5)).toEqual([]);
    expect((await engine.get(a2 as string)).state).toBe('ready');

    // Due again, a1 comes first, though a2 was ready all along; a2 waits until a1 completes.
    clock.advance(5_000);
    const retried = await claim(engine, name, 5);
    expect(retried.map((job) => job.id)).toEqual([a1]);
    expect(retried[0]?.attempt).toBe(2);
    expect(await claim(engine, name, 5)).toEqual([]);
    await engine.complete(retried[0] as (typeof retried)[number]);
    expect((await claim(engine, name, 5)).map((job) => job.id)).toEqual([a2]);
  });

  it("groupOrder 'strict': a job that dies, or is cancelled while it waits to retry, frees its group", async () => {
    const name = ctx.jobName('strict-end');
    const { engine } = ctx.engine();
    const ids = await enqueueGroups(engine, name, ['dies', 'cancelled'], 2);
    const [d1, d2] = ids.get('dies') as string[];
    const [c1, c2] = ids.get('cancelled') as string[];
    await engine.setLimits(name, { groupConcurrency: 1, groupOrder: 'strict' });

    const first = await claim(engine, name, 5);
    const leaseOf = (id: string) => first.find((job) => job.id === id) as (typeof first)[number];
    expect((await engine.fail(leaseOf(d1 as string), { message: 'bad input', permanent: true })).state).toBe('dead');
    expect((await engine.fail(leaseOf(c1 as string), { message: 'try again' })).state).toBe('scheduled');
    // The dead job frees its group at once; the scheduled one holds its group until it is cancelled.
    expect((await claim(engine, name, 5)).map((job) => job.id)).toEqual([d2]);
    expect(await claim(engine, name, 5)).toEqual([]);
    expect(await engine.cancel(c1 as string)).toBe(true);
    expect((await claim(engine, name, 5)).map((job) => job.id)).toEqual([c2]);
  });

  it("groupOrder 'strict': a job whose lease expired holds its group and is delivered again first", async () => {
    const name = ctx.jobName('strict-lease');
    const { engine, store, clock } = ctx.engine();
    const [j1] = (await enqueueGroups(engine, name, ['a'], 1)).get('a') as string[];
    await engine.setLimits(name, { groupConcurrency: 1, groupOrder: 'strict' });
    expect((await claim(engine, name, 1)).map((job) => job.id)).toEqual([j1]);
    // A later job of the group that would otherwise go first.
    const [j2] = await enqueueJobs(engine, name, 1, { group: 'a', priority: 10 });
    const now = clock.advance(60_000);
    await store.requeueExpiredLeases(now, { message: 'lease expired', code: 'LEASE_EXPIRED', at: now });
    expect((await engine.get(j1 as string)).state).toBe('ready');
    const again = await claim(engine, name, 2);
    expect(again.map((job) => job.id)).toEqual([j1]);
    await engine.complete(again[0] as (typeof again)[number]);
    expect((await claim(engine, name, 2)).map((job) => job.id)).toEqual([j2]);
  });

  it('without groupOrder a failed job does not hold its group, and clearing it frees a held group', async () => {
    const name = ctx.jobName('strict-off');
    const { engine } = ctx.engine();
    const [j1, j2, j3] = (await enqueueGroups(engine, name, ['a'], 3)).get('a') as string[];
    await engine.setLimits(name, { groupConcurrency: 1 });
    const [first] = await claim(engine, name, 1);
    expect(first?.id).toBe(j1);
    await engine.fail(first as NonNullable<typeof first>, { message: 'try again' });
    const [second] = await claim(engine, name, 1);
    expect(second?.id).toBe(j2);

    await engine.setLimits(name, { groupOrder: 'strict' });
    await engine.fail(second as NonNullable<typeof second>, { message: 'try again' });
    expect(await claim(engine, name, 1)).toEqual([]);
    await engine.setLimits(name, { groupOrder: null });
    expect((await claim(engine, name, 1)).map((job) => job.id)).toEqual([j3]);
  });

  it("groupOrder 'strict' needs groupConcurrency 1: anything else is VALIDATION and changes nothing", async () => {
    const name = ctx.jobName('strict-refused');
    const { engine } = ctx.engine();
    await expect(engine.setLimits(name, { groupOrder: 'strict' })).rejects.toThrow(
      /would have groupConcurrency null\./,
    );
    await expect(engine.setLimits(name, { groupConcurrency: 2, groupOrder: 'strict' })).rejects.toThrow(
      /would have groupConcurrency 2\./,
    );
    await expectWorkqError(
      engine.setLimits(name, { groupOrder: 'fifo' } as unknown as { groupOrder: 'strict' }),
      'VALIDATION',
    );
    expect(await ctx.store.listQueueSettings(name)).toEqual([]);
    expect(await engine.setLimits(name, { groupConcurrency: 1, groupOrder: 'strict' })).toEqual({
      concurrency: null,
      rateLimit: null,
      groupConcurrency: 1,
      groupOrder: 'strict',
    });
    await expectWorkqError(engine.setLimits(name, { groupConcurrency: null }), 'VALIDATION');
    const refused = await engine.setLimits(name, { groupConcurrency: 3 }).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'VALIDATION',
      message: expect.stringContaining(
        "groupOrder 'strict' needs groupConcurrency 1 (one job of a group at a time); the limits would have groupConcurrency 3.",
      ),
    });
    const [queue] = (await engine.queues()).filter((q) => q.name === name);
    expect(queue?.limits).toMatchObject({ groupConcurrency: 1, groupOrder: 'strict' });
    expect(await engine.setLimits(name, { groupConcurrency: null, groupOrder: null })).toMatchObject({
      groupConcurrency: null,
      groupOrder: null,
    });
  });
}
