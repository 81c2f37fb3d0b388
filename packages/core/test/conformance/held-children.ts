import { expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.ts';
import type { ChildInput } from '../../src/engine/flows.ts';
import type { ChildOutcome, JobRecord } from '../../src/engine/store.ts';
import { claimOne, type SuiteContext } from './context.ts';

const WIDTH = 1_200;
/** Longer than any lease here. */
const DAY_MS = 86_400_000;

/** Ends every ready job of `name`: the one whose payload says `fail` dies (one attempt), the others complete. */
async function endAll(engine: Engine, name: string): Promise<void> {
  for (;;) {
    const jobs = await engine.claim({ name, maxVersion: 1, limit: 1000, workerId: 'held-children' });
    if (jobs.length === 0) return;
    const failing = jobs.filter((job) => (job.payload as { fail?: boolean }).fail);
    for (const job of failing) await engine.fail(job, { message: 'page render crashed' });
    const passing = jobs.filter((job) => !failing.includes(job));
    const outcomes = await engine.completeMany(
      passing.map((job) => ({ ...job, result: { done: (job.payload as { n: number }).n } })),
    );
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
  }
}

/** What `listHeldChildren` must return of a child, from its full record. */
function outcomeOf(job: JobRecord): ChildOutcome {
  const { id, name, state, runAt, result, error } = job;
  return { id, name, state, runAt, result, error, childCount: job.childCount ?? 0 };
}

/** The narrow, fenced read a resumed parent's worker makes of its children (`FlowStore.listHeldChildren`). */
export function registerHeldChildrenTests(ctx: SuiteContext): void {
  it('flows: a held parent reads its many children narrowly, in enqueue order, page by page, fenced by its lease', async () => {
    const [parentName, childName, grandName] = [
      ctx.jobName('held-parent'),
      ctx.jobName('held-child'),
      ctx.jobName('held-grand'),
    ];
    const { engine, store, clock } = ctx.engine();
    const children: ChildInput[] = Array.from({ length: WIDTH }, (_, n) => ({
      name: childName,
      version: 1,
      payload: { n },
    }));
    children[7] = {
      name: childName,
      version: 1,
      payload: { n: 7, fail: true },
      options: { maxAttempts: 1 },
      onFailure: 'continue',
    };
    children[8] = { ...children[8]!, children: [{ name: grandName, version: 1, payload: { n: -1 } }] };
    const parent = await engine.flows.enqueue({ name: parentName, version: 1, payload: {}, children });
    await endAll(engine, childName);
    await endAll(engine, grandName);
    await endAll(engine, childName);
    const lease = await claimOne(engine, parentName);
    expect(lease.id).toBe(parent.id);
    const now = clock.now();

    // Exactly the contract's fields of every child, in enqueue order: what the full listing holds, narrowed.
    const full = await store.listChildren(parent.id, { limit: 10_000 });
    expect(full.map((job) => (job.payload as { n: number }).n)).toEqual(Array.from({ length: WIDTH }, (_, n) => n));
    const all = await store.listHeldChildren(lease, { limit: 10_000 }, now);
    expect(all).toEqual(full.map(outcomeOf));
    expect(all![7]).toMatchObject({ state: 'dead', result: null, error: { message: 'page render crashed' } });
    expect(all![8]).toMatchObject({ state: 'completed', childCount: 1, error: null });
    expect(all![0]).toMatchObject({ state: 'completed', childCount: 0, error: null });
    for (const child of all!)
      expect(Object.keys(child).sort()).toEqual(['childCount', 'error', 'id', 'name', 'result', 'runAt', 'state']);

    // Pages: after a child, at most the limit; past the last child, an empty page, not a lost lease.
    const page = await store.listHeldChildren(lease, { afterId: full[599]!.id, limit: 500 }, now);
    expect(page).toEqual(all!.slice(600, 1_100));
    expect(await store.listHeldChildren(lease, { afterId: full[WIDTH - 1]!.id, limit: 10 }, now)).toEqual([]);

    // Fenced: another token, an expired lease, or a job that ended reads nothing.
    expect(
      await store.listHeldChildren({ ...lease, leaseToken: `${lease.leaseToken}x` }, { limit: 10 }, now),
    ).toBeNull();
    expect(await store.listHeldChildren(lease, { limit: 10 }, new Date(now.getTime() + DAY_MS))).toBeNull();
    await engine.complete(lease, {});
    expect(await store.listHeldChildren(lease, { limit: 10 }, clock.now())).toBeNull();
  }, 120_000);

  it('flows: a held job without children reads an empty page, and the engine pages a parent for its handler', async () => {
    const [parentName, childName] = [ctx.jobName('held-lone'), ctx.jobName('held-paged')];
    const { engine, store, clock } = ctx.engine();
    await engine.enqueue({ name: parentName, version: 1, payload: {} });
    const lone = await claimOne(engine, parentName);
    expect(await store.listHeldChildren(lone, { limit: 10 }, clock.now())).toEqual([]);
    await engine.complete(lone, {});

    const children = Array.from({ length: 3 }, (_, n) => ({ name: childName, version: 1, payload: { n } }));
    const parent = await engine.flows.enqueue({ name: parentName, version: 1, payload: {}, children });
    await endAll(engine, childName);
    const lease = await claimOne(engine, parentName);
    expect(lease.id).toBe(parent.id);
    const first = await engine.flows.heldChildren(lease, { limit: 2 });
    expect(first).toMatchObject({
      more: true,
      children: [{ name: childName, state: 'completed', result: { done: 0 } }, { result: { done: 1 } }],
    });
    const rest = await engine.flows.heldChildren(lease, { afterId: first.children[1]!.id, limit: 2 });
    expect(rest).toEqual({
      more: false,
      children: [{ id: expect.any(String), name: childName, state: 'completed', result: { done: 2 } }],
    });
    await engine.complete(lease, {});
  });
}
