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
    const read = await store.listHeldChildren(lease, { limit: 10_000 }, now);
    expect(read?.more).toBe(false);
    const all = read!.children;
    expect(all).toEqual(full.map(outcomeOf));
    expect(all![7]).toMatchObject({ state: 'dead', result: null, error: { message: 'page render crashed' } });
    expect(all![8]).toMatchObject({ state: 'completed', childCount: 1, error: null });
    expect(all![0]).toMatchObject({ state: 'completed', childCount: 0, error: null });
    for (const child of all!)
      expect(Object.keys(child).sort()).toEqual(['childCount', 'error', 'id', 'name', 'result', 'runAt', 'state']);

    // A status's narrow read: each child's id, name, state and run time only, in the same order and pages.
    const states = await store.listChildStates(parent.id, { limit: 10_000 });
    expect(states).toEqual(full.map(({ id, name, state, runAt }) => ({ id, name, state, runAt })));
    for (const child of states) expect(Object.keys(child).sort()).toEqual(['id', 'name', 'runAt', 'state']);
    const statePage = await store.listChildStates(parent.id, { afterId: full[99]!.id, limit: 50 });
    expect(statePage).toEqual(states.slice(100, 150));
    // The parent's status lists its first children through that read alone: no payload or result is read.
    const reads: string[] = [];
    const watched = new Proxy(store, {
      get(target, key, receiver) {
        if (typeof key === 'string' && key.startsWith('list')) reads.push(key);
        return Reflect.get(target, key, receiver);
      },
    });
    const status = await ctx.engine({ store: watched, clock }).engine.get(parent.id);
    expect(status.children).toEqual(
      states.slice(0, 1_000).map(({ id, name }) => ({ id, name, state: id === full[7]!.id ? 'dead' : 'completed' })),
    );
    expect(reads).toEqual(['listChildStates']);

    // Pages: after a child, at most the limit; past the last child, an empty page, not a lost lease.
    const page = await store.listHeldChildren(lease, { afterId: full[599]!.id, limit: 500 }, now);
    expect(page).toEqual({ children: all!.slice(600, 1_100), more: true });
    const last = await store.listHeldChildren(lease, { afterId: full[WIDTH - 101]!.id, limit: 100 }, now);
    expect(last).toEqual({ children: all!.slice(WIDTH - 100), more: false });
    const past = await store.listHeldChildren(lease, { afterId: full[WIDTH - 1]!.id, limit: 10 }, now);
    expect(past).toEqual({ children: [], more: false });

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
    expect(await store.listHeldChildren(lone, { limit: 10 }, clock.now())).toEqual({ children: [], more: false });
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

  it('flows: a page of children stops at its bytes, after the child that reaches them, and says more follow', async () => {
    const [parentName, childName] = [ctx.jobName('bytes-parent'), ctx.jobName('bytes-child')];
    const { engine, store, clock } = ctx.engine();
    const text = (n: number) => `${n}`.padEnd(4_000, '.');
    const children = Array.from({ length: 5 }, (_, n) => ({
      name: childName,
      version: 1,
      payload: { n, text: text(n) },
    }));
    const parent = await engine.flows.enqueue({ name: parentName, version: 1, payload: {}, children });
    for (;;) {
      const jobs = await engine.claim({ name: childName, maxVersion: 1, limit: 10, workerId: 'bytes' });
      if (jobs.length === 0) break;
      await engine.completeMany(
        jobs.map((job) => ({ ...job, result: { text: (job.payload as { text: string }).text } })),
      );
    }
    const lease = await claimOne(engine, parentName);
    expect(lease.id).toBe(parent.id);
    const now = clock.now();
    const resultsOf = (page: { children: ChildOutcome[] } | null) =>
      page?.children.map((child) => (child.result as { text: string }).text.slice(0, 1));

    // Each result is about 4,000 bytes: 10,000 bytes are reached by the third, which ends the page.
    const first = await store.listHeldChildren(lease, { limit: 10, maxBytes: 10_000 }, now);
    expect(resultsOf(first)).toEqual(['0', '1', '2']);
    expect(first?.more).toBe(true);
    const rest = await store.listHeldChildren(
      lease,
      { afterId: first!.children[2]!.id, limit: 10, maxBytes: 10_000 },
      now,
    );
    expect(resultsOf(rest)).toEqual(['3', '4']);
    expect(rest?.more).toBe(false);
    // Fewer bytes than one child still reads one; the limit still counts.
    const one = await store.listHeldChildren(lease, { limit: 10, maxBytes: 1 }, now);
    expect(resultsOf(one)).toEqual(['0']);
    expect(one?.more).toBe(true);
    expect(resultsOf(await store.listHeldChildren(lease, { limit: 2, maxBytes: 1_000_000 }, now))).toEqual(['0', '1']);

    // Full records count their payloads too: about 8,000 bytes each, so 10,000 are reached by the second.
    const full = await store.listChildren(parent.id, { limit: 10, maxBytes: 10_000 });
    expect(full.map((job) => (job.payload as { n: number }).n)).toEqual([0, 1]);
    const after = await store.listChildren(parent.id, { afterId: full[1]!.id, limit: 10, maxBytes: 10_000 });
    expect(after.map((job) => (job.payload as { n: number }).n)).toEqual([2, 3]);
    expect((await store.listChildren(parent.id, { limit: 10 })).map((job) => (job.payload as { n: number }).n)).toEqual(
      [0, 1, 2, 3, 4],
    );
    // Without their payloads, children count only their results, as a held page does; every other field is read.
    const slim = await store.listChildren(parent.id, { limit: 10, maxBytes: 10_000, withoutPayload: true });
    const wholes = await store.listChildren(parent.id, { limit: 3 });
    expect(slim).toEqual(wholes.map((job) => ({ ...job, payload: null })));
    const slimAll = await store.listChildren(parent.id, { limit: 10, withoutPayload: true });
    expect(slimAll.map((job) => job.payload)).toEqual([null, null, null, null, null]);

    // The engine's pages for a handler pass the bytes on.
    const paged = await engine.flows.heldChildren(lease, { limit: 10, maxBytes: 10_000 });
    expect(paged.children).toHaveLength(3);
    expect(paged.more).toBe(true);
    await engine.complete(lease, {});
  });
}
