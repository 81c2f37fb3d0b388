import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { claimRequest } from '../../src/engine/claims.ts';
import type { Engine } from '../../src/engine/engine.ts';
import type { ChildInput } from '../../src/engine/flows.ts';
import { CHILD_FAILED_CODE, FLOW_CANCELLED_CODE } from '../../src/engine/store.ts';
import { newJobId } from '../../src/job-ids.ts';
import { newJob } from '../support/fixtures.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { claimOne, expectWorkqError, type SuiteContext } from './context.ts';

const child = (name: string, payload: unknown, extra: Partial<ChildInput> = {}): ChildInput => ({
  name,
  version: 1,
  payload,
  ...extra,
});

/** Claims every ready job of `name` (in batches of up to 1,000) and completes each with `{ done: id }`. */
async function drain(engine: Engine, name: string): Promise<string[]> {
  const done: string[] = [];
  for (;;) {
    const jobs = await engine.claim({ name, maxVersion: 1, limit: 1000, workerId: 'drain' });
    if (jobs.length === 0) return done;
    const outcomes = await engine.completeMany(jobs.map((job) => ({ ...job, result: { done: job.id } })));
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    done.push(...jobs.map((job) => job.id));
  }
}

/** Parents that wait for their children (issue 50), on every store: `FlowStore` and the engine's `Flows`. */
export function registerFlowTests(ctx: SuiteContext): void {
  it('flows: a parent and its children are created together; the parent waits, unclaimable, until they end', async () => {
    const [parentName, childName] = [ctx.jobName('flow-parent'), ctx.jobName('flow-child')];
    const { engine } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: { report: 'r1' },
      children: [child(childName, { page: 1 }), child(childName, { page: 2 }, { onFailure: 'ignore' })],
    });
    expect(parent).toMatchObject({ created: true, state: 'waiting-children' });
    expect(await engine.claim({ name: parentName, maxVersion: 1, limit: 10, workerId: 'w' })).toEqual([]);

    const status = await engine.get(parent.id);
    expect(status).toMatchObject({ state: 'waiting-children', childCount: 2, pendingChildren: 2 });
    expect(status.children?.map((c) => [c.name, c.state])).toEqual([
      [childName, 'ready'],
      [childName, 'ready'],
    ]);
    const stored = await ctx.store.listChildren(parent.id, { limit: 10 });
    expect(stored.map((c) => c.payload)).toEqual([{ page: 1 }, { page: 2 }]);
    const children = await engine.flows.children(parent.id);
    expect(children.map((c) => c.id)).toEqual(stored.map((c) => c.id));
    expect(children.map((c) => [c.parentId, c.onFailure])).toEqual([
      [parent.id, 'fail-parent'],
      [parent.id, 'ignore'],
    ]);

    const [first, second] = await engine.claim({ name: childName, maxVersion: 1, limit: 10, workerId: 'w' });
    await engine.complete(first!, { url: 'p1' });
    expect(await engine.get(parent.id)).toMatchObject({ state: 'waiting-children', pendingChildren: 1 });
    expect(await engine.claim({ name: parentName, maxVersion: 1, limit: 10, workerId: 'w' })).toEqual([]);
    await engine.complete(second!, { url: 'p2' });

    const claimed = await claimOne(engine, parentName);
    expect(claimed).toMatchObject({ id: parent.id, attempt: 1, resumed: true, payload: { report: 'r1' } });
    // The children's results are read from the children, in enqueue order.
    expect((await engine.flows.children(parent.id)).map((c) => c.result)).toEqual([{ url: 'p1' }, { url: 'p2' }]);
    await engine.complete(claimed);
  });

  it('flows: a child that fails validation, or an insert that fails, stores nothing of the flow', async () => {
    const [parentName, childName] = [ctx.jobName('atomic-parent'), ctx.jobName('atomic-child')];
    const { engine, store } = ctx.engine();
    const chosenId = randomUUID();
    const nested = (bad: ChildInput): ChildInput =>
      child(childName, { n: 1 }, { children: [child(childName, {}), bad] });
    const attempts: [ChildInput, string][] = [
      [nested(child('not a valid name!', {})), 'UNKNOWN_JOB'],
      [nested(child(childName, {}, { version: 0 })), 'UNSUPPORTED_VERSION'],
      [nested(child(childName, {}, { onFailure: 'explode' as never })), 'VALIDATION'],
      [nested(child(childName, {}, { options: { idempotencyKey: 'k' } })), 'VALIDATION'],
      [nested(child(childName, {}, { options: { priority: 1.5 } })), 'VALIDATION'],
      // Ids order a parent's children: one the caller chose would break their enqueue order.
      [nested(child(childName, {}, { options: { id: chosenId } })), 'VALIDATION'],
      [nested(child(childName, {}, { id: chosenId })), 'VALIDATION'],
    ];
    for (const [bad, code] of attempts) {
      await expectWorkqError(
        engine.flows.enqueue({ name: parentName, version: 1, payload: {}, children: [child(childName, {}), bad] }),
        code as never,
      );
    }
    // The store refuses the insert itself (a repeated id, after some jobs of the flow went in): none stays.
    const rootId = `${parentName}-root`;
    const childId = `${parentName}-child`;
    await expect(
      store.insertFlow([
        newJob(parentName, { id: rootId, pendingChildren: 2 }),
        newJob(childName, { id: childId, parentId: rootId, onFailure: 'fail-parent' }),
        newJob(childName, { id: childId, parentId: rootId, onFailure: 'fail-parent' }),
      ]),
    ).rejects.toThrow();
    expect(await store.getJob(rootId)).toBeNull();
    expect(await store.getJob(childId)).toBeNull();
    for (const name of [parentName, childName]) expect((await engine.list({ name })).jobs).toEqual([]);
    expect(await store.getJob(chosenId)).toBeNull();
  });

  it('flows: a child given an id of its own is refused, at enqueue and in waitForChildren, storing nothing', async () => {
    const [parentName, childName] = [ctx.jobName('chosen-parent'), ctx.jobName('chosen-child')];
    const { engine } = ctx.engine();
    const chosen = randomUUID();
    const refused = await expectWorkqError(
      engine.flows.enqueue({
        name: parentName,
        version: 1,
        payload: {},
        children: [child(childName, {}, { id: chosen })],
      }),
      'VALIDATION',
    );
    expect(refused.message).toContain('takes no id');
    const { id } = await engine.enqueue({ name: parentName, version: 1, payload: {} });
    const lease = await claimOne(engine, parentName);
    await expectWorkqError(
      engine.flows.waitForChildren(lease, [
        child(childName, { n: 1 }),
        child(childName, {}, { options: { id: chosen } }),
      ]),
      'VALIDATION',
    );
    expect(await ctx.store.getJob(chosen)).toBeNull();
    expect(await engine.flows.children(id)).toEqual([]);
    expect((await engine.list({ name: childName })).jobs).toEqual([]);
    await engine.complete(lease, {});
  });

  it("flows: under the parent's idempotency key a second flow returns the first parent and stores nothing", async () => {
    const [parentName, childName] = [ctx.jobName('keyed-parent'), ctx.jobName('keyed-child')];
    const { engine } = ctx.engine();
    const flow = (n: number) => ({
      name: parentName,
      version: 1,
      payload: { n },
      idempotencyKey: 'report-1',
      children: [child(childName, { n }), child(childName, { n: n + 1 })],
    });
    const first = await engine.flows.enqueue(flow(1));
    expect(first).toMatchObject({ created: true, state: 'waiting-children' });
    expect(await engine.flows.enqueue(flow(10))).toEqual({ id: first.id, created: false, state: 'waiting-children' });
    expect((await engine.list({ name: parentName })).jobs.map((job) => job.id)).toEqual([first.id]);
    const children = await ctx.store.listChildren(first.id, { limit: 10 });
    expect(children.map((c) => c.payload)).toEqual([{ n: 1 }, { n: 2 }]);
    expect((await engine.list({ name: childName })).jobs).toHaveLength(2);
    expect(await engine.get(first.id)).toMatchObject({ pendingChildren: 2, childCount: 2 });
  });

  it("flows: the same flow sent again under its parent's id is one flow; the second answer is that parent, not created", async () => {
    const [parentName, childName] = [ctx.jobName('id-parent'), ctx.jobName('id-child')];
    const { engine } = ctx.engine();
    const id = newJobId();
    const flow = {
      name: parentName,
      version: 1,
      payload: { report: 'r1', pages: [1, 2] },
      options: { id },
      children: [child(childName, { page: 1 }), child(childName, { page: 2 })],
    };
    expect(await engine.flows.enqueue(flow)).toEqual({ id, created: true, state: 'waiting-children' });
    const before = await ctx.store.getJob(id);
    expect(await engine.flows.enqueue(flow)).toEqual({ id, created: false, state: 'waiting-children' });
    // A UUID names the same job in upper case; the payload's key order is not part of it.
    const reordered = { ...flow, payload: { pages: [1, 2], report: 'r1' }, options: { id: id.toUpperCase() } };
    expect(await engine.flows.enqueue(reordered)).toEqual({ id, created: false, state: 'waiting-children' });
    expect(await ctx.store.getJob(id)).toEqual(before);
    expect((await engine.list({ name: parentName })).jobs.map((job) => job.id)).toEqual([id]);
    expect((await ctx.store.listChildren(id, { limit: 10 })).map((c) => c.payload)).toEqual([{ page: 1 }, { page: 2 }]);
    expect((await engine.list({ name: childName })).jobs).toHaveLength(2);
  });

  it('flows: a flow under a parent id another job holds (another payload, version or type) is CONFLICT naming the id, and stores nothing', async () => {
    const [parentName, childName, otherName] = [
      ctx.jobName('id-taken-parent'),
      ctx.jobName('id-taken-child'),
      ctx.jobName('id-taken-other'),
    ];
    const { engine } = ctx.engine();
    const id = newJobId();
    const children = [child(childName, { page: 1 })];
    await engine.flows.enqueue({ name: parentName, version: 1, payload: { n: 1 }, options: { id }, children });
    const before = await ctx.store.getJob(id);
    const attempts = [
      { name: parentName, version: 1, payload: { n: 2 }, options: { id }, children },
      { name: parentName, version: 2, payload: { n: 1 }, options: { id }, children },
      { name: otherName, version: 1, payload: { n: 1 }, options: { id }, children },
    ];
    for (const attempt of attempts) {
      const error = await expectWorkqError(engine.flows.enqueue(attempt), 'CONFLICT');
      expect(error.message).toContain(id);
      expect(error.details).toEqual({ ids: [id] });
    }
    // A plain job holding the id refuses a flow under it in the same way.
    const plainId = newJobId();
    await engine.enqueue({ name: otherName, version: 1, payload: { n: 1 }, options: { id: plainId } });
    await expectWorkqError(
      engine.flows.enqueue({ name: parentName, version: 1, payload: { n: 1 }, options: { id: plainId }, children }),
      'CONFLICT',
    );
    expect(await ctx.store.getJob(id)).toEqual(before);
    expect((await engine.list({ name: childName })).jobs).toHaveLength(1);
    expect((await engine.list({ name: otherName })).jobs.map((job) => job.id)).toEqual([plainId]);
  });

  it("flows: concurrent sends of one flow under its parent's id make exactly one flow", async () => {
    const [parentName, childName] = [ctx.jobName('id-race-parent'), ctx.jobName('id-race-child')];
    const clock = new ManualClock();
    const engines = (await ctx.clientStores(4)).map((store) => ctx.engine({ store, clock }).engine);
    const id = newJobId();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        engines[n % engines.length]!.flows.enqueue({
          name: parentName,
          version: 1,
          payload: { same: true },
          options: { id },
          children: [child(childName, { page: 1 }), child(childName, { page: 2 })],
        }),
      ),
    );
    expect(new Set(results.map((result) => result.id))).toEqual(new Set([id]));
    expect(results.filter((result) => result.created)).toHaveLength(1);
    expect((await engines[0]!.list({ name: parentName })).jobs.map((job) => job.id)).toEqual([id]);
    expect((await engines[0]!.list({ name: childName })).jobs).toHaveLength(2);
  });

  it('flows: nested children: a child with children waits for them, and its parent for it', async () => {
    const [top, middle, leaf] = [ctx.jobName('nest-top'), ctx.jobName('nest-middle'), ctx.jobName('nest-leaf')];
    const { engine } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: top,
      version: 1,
      payload: {},
      children: [child(middle, { m: 1 }, { children: [child(leaf, { l: 1 }), child(leaf, { l: 2 })] })],
    });
    const [mid] = await engine.flows.children(parent.id);
    expect(mid).toMatchObject({ name: middle, state: 'waiting-children', childCount: 2, parentId: parent.id });
    expect(await engine.claim({ name: middle, maxVersion: 1, limit: 5, workerId: 'w' })).toEqual([]);
    expect(await drain(engine, leaf)).toHaveLength(2);
    expect(await engine.get(parent.id)).toMatchObject({ state: 'waiting-children', pendingChildren: 1 });
    const midClaim = await claimOne(engine, middle);
    expect(midClaim).toMatchObject({ id: mid!.id, resumed: true });
    await engine.complete(midClaim, { merged: true });
    expect(await claimOne(engine, top)).toMatchObject({ id: parent.id, resumed: true });
  });

  it('flows: children completed at once from several connections make the parent ready exactly once', async () => {
    const [parentName, childName] = [ctx.jobName('race-parent'), ctx.jobName('race-child')];
    const { engine } = ctx.engine();
    const count = 48;
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: Array.from({ length: count }, (_, n) => child(childName, { n })),
    });
    const held = await engine.claim({ name: childName, maxVersion: 1, limit: count, workerId: 'w' });
    expect(held).toHaveLength(count);
    const stores = await ctx.clientStores(6);
    const engines = stores.map((store) => ctx.engine({ store }).engine);
    let readied = 0;
    for (const store of new Set([ctx.store, ...stores])) {
      store.onParentsReady((names) => (readied += names.filter((name) => name === parentName).length));
    }
    // Every child's ack goes on its own, all of them at once, spread over the connections.
    await Promise.all(held.map((job, i) => engines[i % engines.length]!.complete(job, { n: i })));
    expect(await engine.get(parent.id)).toMatchObject({ state: 'ready' });
    const claims = await Promise.all(
      engines.map((other) => other.claim({ name: parentName, maxVersion: 1, limit: 5, workerId: 'p' })),
    );
    expect(claims.flat().map((job) => job.id)).toEqual([parent.id]);
    // The stores said so once: the one whose completion made it ready.
    expect(readied).toBe(1);
  });

  it('flows: the last child acked by a claim under its type’s limits makes the parent ready, and says so', async () => {
    const [parentName, childName] = [ctx.jobName('limited-parent'), ctx.jobName('limited-child')];
    const { engine, clock, store } = ctx.engine();
    await engine.setLimits(childName, { concurrency: 5 });
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: [child(childName, { n: 1 }), child(childName, { n: 2 })],
    });
    let readied = 0;
    store.onParentsReady((names) => (readied += names.filter((name) => name === parentName).length));
    const [first, second] = await engine.claim({ name: childName, maxVersion: 1, limit: 5, workerId: 'w' });
    await engine.complete(first!, {});
    // The ack rides on the type's next claim, as a worker's does: completed with it, in one commit where the store can.
    const request = claimRequest({ name: childName, maxVersion: 1, limit: 5, workerId: 'w' }, clock.now());
    const { outcomes } = await engine.claims.completeAndClaim([{ ...second!, result: {} }], request);
    expect(outcomes).toMatchObject([{ ok: true }]);
    expect(readied).toBe(1);
    expect(await claimOne(engine, parentName)).toMatchObject({ id: parent.id, resumed: true });
  });

  it("flows: onFailure 'fail-parent': a dead child makes the parent dead, naming it, and cancels the rest", async () => {
    const [parentName, childName, leaf] = [
      ctx.jobName('fail-parent'),
      ctx.jobName('fail-child'),
      ctx.jobName('fail-leaf'),
    ];
    const { engine } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: [
        child(childName, { n: 1 }, { options: { maxAttempts: 1 } }),
        child(childName, { n: 2 }, { children: [child(leaf, {})] }),
        child(childName, { n: 3 }),
      ],
    });
    const doomed = (await engine.flows.children(parent.id))[0]!;
    const [lease] = await engine.claim({ name: childName, maxVersion: 1, limit: 1, workerId: 'w' });
    expect(lease?.id).toBe(doomed.id);
    await engine.fail(lease!, { message: 'page render crashed' });

    const status = await engine.get(parent.id);
    expect(status.state).toBe('dead');
    expect(status.error).toMatchObject({ code: CHILD_FAILED_CODE });
    expect(status.error?.message).toContain(doomed.id);
    expect(status.error?.message).toContain('page render crashed');
    const [, second, third] = await engine.flows.children(parent.id);
    expect([second?.state, third?.state]).toEqual(['cancelled', 'cancelled']);
    expect(second?.error?.code).toBe(FLOW_CANCELLED_CODE);
    const [grandchild] = await engine.flows.children(second!.id);
    expect(grandchild).toMatchObject({ state: 'cancelled' });
    for (const name of [parentName, childName, leaf]) {
      expect(await engine.claim({ name, maxVersion: 1, limit: 5, workerId: 'w' })).toEqual([]);
    }
  });

  it("flows: onFailure 'ignore' and 'continue': the parent runs once the others end, the dead child listed", async () => {
    for (const onFailure of ['ignore', 'continue'] as const) {
      const [parentName, childName] = [ctx.jobName(`${onFailure}-parent`), ctx.jobName(`${onFailure}-child`)];
      const { engine } = ctx.engine();
      const parent = await engine.flows.enqueue({
        name: parentName,
        version: 1,
        payload: {},
        children: [child(childName, { n: 1 }, { onFailure }), child(childName, { n: 2 })],
      });
      const [failing, fine] = await engine.claim({ name: childName, maxVersion: 1, limit: 2, workerId: 'w' });
      await engine.fail(failing!, { message: 'gone', permanent: true });
      expect(await engine.get(parent.id)).toMatchObject({ state: 'waiting-children', pendingChildren: 1 });
      await engine.complete(fine!, { ok: true });
      expect(await claimOne(engine, parentName)).toMatchObject({ id: parent.id });
      const children = await engine.flows.children(parent.id);
      expect(children.map((c) => c.state)).toEqual(['dead', 'completed']);
      expect(children[0]?.error?.message).toBe('gone');
    }
  });

  it('flows: a child ends through moveTo, and through its lease running out with no attempt left', async () => {
    const [parentName, childName, nextName] = [
      ctx.jobName('end-parent'),
      ctx.jobName('end-child'),
      ctx.jobName('end-next'),
    ];
    const { engine, clock } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: [
        child(childName, { n: 1 }),
        child(childName, { n: 2 }, { onFailure: 'continue', options: { maxAttempts: 1, leaseMs: 1_000 } }),
      ],
    });
    const [moving, expiring] = await engine.claim({ name: childName, maxVersion: 1, limit: 2, workerId: 'w' });
    await engine.moveTo(moving!, { name: nextName, version: 1, payload: {} });
    expect(await engine.get(parent.id)).toMatchObject({ state: 'waiting-children', pendingChildren: 1 });
    clock.advance(2_000);
    expect(await engine.sweepExpiredLeases()).toEqual({ requeued: 0, dead: 1 });
    expect((await engine.get(expiring!.id)).state).toBe('dead');
    expect(await claimOne(engine, parentName)).toMatchObject({ id: parent.id });
  });

  it('flows: cancelling a parent cancels its unfinished children at every depth; finished ones stay', async () => {
    const [parentName, childName, leaf] = [
      ctx.jobName('cancel-parent'),
      ctx.jobName('cancel-child'),
      ctx.jobName('cancel-leaf'),
    ];
    const { engine } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: [child(childName, { n: 1 }), child(childName, { n: 2 }, { children: [child(leaf, {})] })],
    });
    const done = await claimOne(engine, childName);
    await engine.complete(done, {});
    expect(await engine.cancel(parent.id)).toBe(true);
    const [first, second] = await engine.flows.children(parent.id);
    expect([first?.state, second?.state]).toEqual(['completed', 'cancelled']);
    expect((await engine.flows.children(second!.id)).map((c) => c.state)).toEqual(['cancelled']);
    expect(await engine.get(parent.id)).toMatchObject({ state: 'cancelled' });
    for (const name of [parentName, childName, leaf]) {
      expect(await engine.claim({ name, maxVersion: 1, limit: 5, workerId: 'w' })).toEqual([]);
    }
  });

  it('flows: retrying a dead child revives the parent that died of it, and the children cancelled with it', async () => {
    const [parentName, childName] = [ctx.jobName('revive-parent'), ctx.jobName('revive-child')];
    const { engine } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: [child(childName, { n: 1 }, { options: { maxAttempts: 1 } }), child(childName, { n: 2 })],
    });
    const [failing] = await engine.claim({ name: childName, maxVersion: 1, limit: 1, workerId: 'w' });
    await engine.fail(failing!, { message: 'flaky' });
    expect((await engine.get(parent.id)).state).toBe('dead');

    expect(await engine.retryDead({ ids: [failing!.id] })).toBe(1);
    expect(await engine.get(parent.id)).toMatchObject({ state: 'waiting-children', pendingChildren: 2 });
    expect((await engine.flows.children(parent.id)).map((c) => c.state)).toEqual(['ready', 'ready']);
    expect(await drain(engine, childName)).toHaveLength(2);
    expect(await claimOne(engine, parentName)).toMatchObject({ id: parent.id });
  });

  it('flows: replaying a parent replays its flow: a new parent waiting for new children', async () => {
    const [parentName, childName, leaf] = [
      ctx.jobName('replay-parent'),
      ctx.jobName('replay-child'),
      ctx.jobName('replay-leaf'),
    ];
    const { engine } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: { p: 1 },
      children: [
        child(childName, { n: 1 }, { children: [child(leaf, { l: 1 })] }),
        child(childName, { n: 2 }, { onFailure: 'ignore' }),
      ],
    });
    await drain(engine, leaf);
    await drain(engine, childName);
    await engine.complete(await claimOne(engine, parentName), {});

    const replay = await engine.replay(parent.id);
    expect(replay).toMatchObject({ created: true, state: 'waiting-children' });
    expect(await engine.get(replay.id)).toMatchObject({ replayOf: parent.id, childCount: 2 });
    expect((await ctx.store.getJob(replay.id))?.payload).toEqual({ p: 1 });
    const children = await ctx.store.listChildren(replay.id, { limit: 10 });
    expect(children.map((c) => [c.name, c.payload, c.onFailure, c.state])).toEqual([
      [childName, { n: 1 }, 'fail-parent', 'waiting-children'],
      [childName, { n: 2 }, 'ignore', 'waiting'],
    ]);
    const original = await engine.flows.children(parent.id);
    expect(children.map((c) => c.replayOf)).toEqual(original.map((c) => c.id));
    const [grandchild] = await ctx.store.listChildren(children[0]!.id, { limit: 10 });
    expect(grandchild).toMatchObject({ name: leaf, payload: { l: 1 }, parentId: children[0]!.id, state: 'waiting' });
  });

  it('flows: waitForChildren ends the attempt uncounted, parks the parent, and it runs again resumed', async () => {
    const [parentName, childName] = [ctx.jobName('wait-parent'), ctx.jobName('wait-child')];
    const { engine } = ctx.engine();
    const { id } = await engine.enqueue({ name: parentName, version: 1, payload: {}, options: { maxAttempts: 1 } });
    const lease = await claimOne(engine, parentName);
    expect(lease.resumed).toBeUndefined();
    const children = await engine.flows.waitForChildren(lease, [
      child(childName, { n: 1 }),
      child(childName, { n: 2 }, { children: [child(childName, { n: 3 })] }),
    ]);
    expect(children.map((c) => c.state)).toEqual(['ready', 'waiting-children']);
    expect(await engine.get(id)).toMatchObject({ state: 'waiting-children', attempts: 0, pendingChildren: 2 });
    expect((await engine.get(id)).error).toBeUndefined();
    // The lease ended with the attempt: it completes nothing now.
    await expectWorkqError(engine.complete(lease, {}), 'LEASE_LOST');
    await expectWorkqError(engine.flows.waitForChildren(lease, [child(childName, {})]), 'LEASE_LOST');
    expect(await engine.flows.children(id)).toHaveLength(2);

    // The two ready children first; the one with a child of its own once that child has ended.
    expect(await drain(engine, childName)).toHaveLength(3);
    const resumed = await claimOne(engine, parentName);
    // maxAttempts 1, and still its first attempt: the park spent none.
    expect(resumed).toMatchObject({ id, attempt: 1, resumed: true });
    await engine.complete(resumed, {});
  });

  it('flows: a parent with 10,000 children becomes ready once, after the last', async () => {
    const [parentName, childName] = [ctx.jobName('wide-parent'), ctx.jobName('wide-child')];
    const { engine } = ctx.engine();
    const parent = await engine.flows.enqueue({
      name: parentName,
      version: 1,
      payload: {},
      children: Array.from({ length: 10_000 }, (_, n) => child(childName, { n })),
    });
    expect((await engine.get(parent.id)).children).toHaveLength(1_000);
    expect(await drain(engine, childName)).toHaveLength(10_000);
    expect(await engine.get(parent.id)).toMatchObject({ state: 'ready', childCount: 10_000 });
    expect(await claimOne(engine, parentName)).toMatchObject({ id: parent.id });
    const all = await ctx.store.listChildren(parent.id, { limit: 10_000 });
    expect(all.map((c) => (c.payload as { n: number }).n)).toEqual(Array.from({ length: 10_000 }, (_, n) => n));
    expect(await engine.flows.children(parent.id, { afterId: all[9_998]!.id })).toMatchObject([{ id: all[9_999]!.id }]);
  }, 120_000);
}
