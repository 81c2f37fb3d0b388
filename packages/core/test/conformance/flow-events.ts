import { expect, it } from 'vitest';
import { claimRequest } from '../../src/engine/claims.ts';
import type { Engine } from '../../src/engine/engine.ts';
import type { ChildInput } from '../../src/engine/flows.ts';
import type { JobEventSink } from '../../src/engine/job-events.ts';
import { CHILD_FAILED_CODE, FLOW_CANCELLED_CODE } from '../../src/engine/store.ts';
import { eventsOfRun, type JobEvent } from '../../src/events.ts';
import { claimOne, type SuiteContext } from './context.ts';

const child = (name: string, payload: unknown, extra: Partial<ChildInput> = {}): ChildInput => ({
  name,
  version: 1,
  payload,
  ...extra,
});

/** A sink that always listens and keeps every event it is handed. */
function recordingSink(): JobEventSink & { events: JobEvent[] } {
  const events: JobEvent[] = [];
  return { events, listening: true, publish: (runs) => void events.push(...runs.flatMap(eventsOfRun)) };
}

/** The events of `id` (of `type`, when given), in the order they were made. */
function eventsOf(sink: { events: JobEvent[] }, id: string, type?: JobEvent['type']): JobEvent[] {
  return sink.events.filter((event) => event.id === id && (type === undefined || event.type === type));
}

/** Enqueues a flow: a parent of `name` (payload `{}`) with `children`. */
function enqueueFlow(engine: Engine, name: string, children: ChildInput[]) {
  return engine.flows.enqueue({ name, version: 1, payload: {}, children });
}

/** Flows as event subscribers and result waits see them (issue 50, "Seen everywhere"), on every store. */
export function registerFlowEventTests(ctx: SuiteContext): void {
  /** A test's job names: its parents', its children's, and their children's. */
  const namesOf = (topic: string) =>
    [ctx.jobName(`${topic}-parent`), ctx.jobName(`${topic}-child`), ctx.jobName(`${topic}-leaf`)] as const;

  it("flow events: each child's started, progress, failed, completed and dead events name its parent; other jobs' name none", async () => {
    const [parentName, childName, plainName] = [
      ctx.jobName('ev-parent'),
      ctx.jobName('ev-child'),
      ctx.jobName('ev-plain'),
    ];
    const sink = recordingSink();
    const { engine, clock } = ctx.engine({ events: sink });
    const parent = await enqueueFlow(engine, parentName, [
      child(childName, { n: 1 }),
      child(childName, { n: 2 }, { onFailure: 'ignore', options: { maxAttempts: 1 } }),
      child(childName, { n: 3 }),
    ]);
    const [first, second, third] = await engine.claim({ name: childName, maxVersion: 1, limit: 3, workerId: 'w' });
    await engine.progress(first!, 50);
    await engine.complete(first!, { page: 1 });
    await engine.fail(second!, { message: 'blank page' });
    // The last child's ack rides on the type's next claim, as a worker's does.
    const request = claimRequest({ name: childName, maxVersion: 1, limit: 1, workerId: 'w' }, clock.now());
    await engine.claims.completeAndClaim([{ ...third!, result: { page: 3 } }], request);
    const plain = await engine.enqueue({ name: plainName, version: 1, payload: {} });
    await engine.complete(await claimOne(engine, plainName), {});

    const parentId = parent.id;
    expect(eventsOf(sink, first!.id).map((event) => [event.type, event.parentId])).toEqual([
      ['enqueued', parentId],
      ['started', parentId],
      ['progress', parentId],
      ['completed', parentId],
    ]);
    expect(eventsOf(sink, first!.id, 'completed')[0]).toMatchObject({ result: { page: 1 }, attempt: 1 });
    expect(eventsOf(sink, second!.id).map((event) => [event.type, event.parentId])).toEqual([
      ['enqueued', parentId],
      ['started', parentId],
      ['failed', parentId],
      ['dead', parentId],
    ]);
    expect(eventsOf(sink, third!.id, 'completed')).toMatchObject([{ parentId, result: { page: 3 } }]);
    for (const event of eventsOf(sink, plain.id)) expect(event).not.toHaveProperty('parentId');
    expect(eventsOf(sink, parentId).map((event) => event.type)).toEqual(['enqueued', 'waiting-children']);
  });

  it("flow events: an ack of a child leased by another process still names the child's parent", async () => {
    const [parentName, childName] = namesOf('ev-far');
    const { engine: claimer } = ctx.engine();
    const sink = recordingSink();
    const { engine: acker } = ctx.engine({ events: sink });
    const parent = await enqueueFlow(claimer, parentName, [child(childName, { n: 1 })]);
    const leased = await claimOne(claimer, childName);
    await acker.complete(leased, { ok: true });
    await expect.poll(() => eventsOf(sink, leased.id, 'completed')).toMatchObject([{ parentId: parent.id }]);
  });

  it("flow events: a child's lease that runs out in another process's sweep names its parent, and kills it", async () => {
    const [parentName, childName] = namesOf('ev-swept');
    const { engine: claimer, clock } = ctx.engine();
    const sink = recordingSink();
    const { engine: sweeper } = ctx.engine({ events: sink, clock });
    const parent = await enqueueFlow(claimer, parentName, [
      child(childName, { n: 1 }, { options: { maxAttempts: 1, leaseMs: 1_000 } }),
    ]);
    const leased = await claimOne(claimer, childName);
    clock.advance(2_000);
    await sweeper.sweepExpiredLeases();
    const swept = eventsOf(sink, leased.id).map((event) => [event.type, event.parentId, event.error?.code]);
    expect(swept).toEqual([
      ['failed', parent.id, 'LEASE_EXPIRED'],
      ['dead', parent.id, 'LEASE_EXPIRED'],
    ]);
    await expect.poll(() => eventsOf(sink, parent.id, 'dead')).toMatchObject([{ error: { code: CHILD_FAILED_CODE } }]);
  });

  it("flow events: a 'fail-parent' death makes the parent's dead event and a cancelled event for each job cancelled with it", async () => {
    const [parentName, childName, leaf] = namesOf('ev-dying');
    const sink = recordingSink();
    const { engine } = ctx.engine({ events: sink });
    const parent = await enqueueFlow(engine, parentName, [
      child(childName, { n: 1 }, { options: { maxAttempts: 1 } }),
      child(childName, { n: 2 }, { children: [child(leaf, {})] }),
      child(childName, { n: 3 }),
    ]);
    const [doomed, nested, third] = await engine.flows.children(parent.id);
    const [grandchild] = await engine.flows.children(nested!.id);
    const lease = await claimOne(engine, childName);
    await engine.fail(lease, { message: 'page render crashed' });

    await expect.poll(() => eventsOf(sink, parent.id, 'dead')).toHaveLength(1);
    const [dead] = eventsOf(sink, parent.id, 'dead');
    expect(dead).toMatchObject({ name: parentName, error: { code: CHILD_FAILED_CODE } });
    expect(dead?.error?.message).toContain(doomed!.id);
    expect(dead).not.toHaveProperty('parentId');
    for (const [job, parentId] of [
      [nested!, parent.id],
      [third!, parent.id],
      [grandchild!, nested!.id],
    ] as const) {
      await expect.poll(() => eventsOf(sink, job.id, 'cancelled')).toHaveLength(1);
      expect(eventsOf(sink, job.id, 'cancelled')[0]).toMatchObject({
        name: job.name,
        parentId,
        error: { code: FLOW_CANCELLED_CODE },
      });
    }
  });

  it('flow events: cancelling a parent makes a cancelled event for each unfinished descendant; cancelling a child names its parent', async () => {
    const [parentName, childName, leaf] = namesOf('ev-cancel');
    const sink = recordingSink();
    const { engine } = ctx.engine({ events: sink });
    const parent = await enqueueFlow(engine, parentName, [
      child(childName, { n: 1 }),
      child(childName, { n: 2 }, { children: [child(leaf, {})] }),
    ]);
    const [done, nested] = await engine.flows.children(parent.id);
    const [grandchild] = await engine.flows.children(nested!.id);
    await engine.complete(await claimOne(engine, childName), {});
    expect(await engine.cancel(parent.id)).toBe(true);

    expect(eventsOf(sink, parent.id, 'cancelled')).toHaveLength(1);
    expect(eventsOf(sink, parent.id, 'cancelled')[0]).not.toHaveProperty('parentId');
    await expect.poll(() => eventsOf(sink, grandchild!.id, 'cancelled')).toHaveLength(1);
    expect(eventsOf(sink, grandchild!.id, 'cancelled')[0]).toMatchObject({
      parentId: nested!.id,
      error: { code: FLOW_CANCELLED_CODE },
    });
    await expect.poll(() => eventsOf(sink, nested!.id, 'cancelled')).toHaveLength(1);
    expect(eventsOf(sink, nested!.id, 'cancelled')[0]).toMatchObject({ parentId: parent.id });
    expect(eventsOf(sink, done!.id, 'cancelled')).toEqual([]);

    // A child cancelled on its own names its parent, and its death under 'fail-parent' is its parent's.
    const other = await enqueueFlow(engine, parentName, [child(childName, { n: 3 }), child(childName, { n: 4 })]);
    const [cancelled, sibling] = await engine.flows.children(other.id);
    expect(await engine.cancel(cancelled!.id)).toBe(true);
    expect(eventsOf(sink, cancelled!.id, 'cancelled')).toMatchObject([{ parentId: other.id }]);
    await expect.poll(() => eventsOf(sink, other.id, 'dead')).toHaveLength(1);
    await expect.poll(() => eventsOf(sink, sibling!.id, 'cancelled')).toMatchObject([{ parentId: other.id }]);
  });

  it('flow ends: a job that ends dead or cancelled is announced finished in the process that ended it, and so is each job its flow ends, with no one listening for events', async () => {
    const [parentName, childName, leaf] = namesOf('fin');
    const { engine, clock } = ctx.engine();
    const finished = new Map<string, string>();
    engine.onFinished((id, state) => void finished.set(id, state));

    // A parent cancelled: each unfinished descendant, to the bottom.
    const cancelled = await enqueueFlow(engine, parentName, [
      child(childName, { n: 1 }, { children: [child(leaf, {})] }),
    ]);
    const [nested] = await engine.flows.children(cancelled.id);
    const [grandchild] = await engine.flows.children(nested!.id);
    await engine.cancel(cancelled.id);
    await expect
      .poll(() => [finished.get(nested!.id), finished.get(grandchild!.id)])
      .toEqual(['cancelled', 'cancelled']);

    // A 'fail-parent' child's death: its parent, dead, and the sibling cancelled with it.
    const failed = await enqueueFlow(engine, parentName, [
      child(childName, { n: 2 }, { options: { maxAttempts: 1 } }),
      child(leaf, {}),
    ]);
    const [, sibling] = await engine.flows.children(failed.id);
    await engine.fail(await claimOne(engine, childName), { message: 'page render crashed' });
    await expect.poll(() => [finished.get(failed.id), finished.get(sibling!.id)]).toEqual(['dead', 'cancelled']);

    // A child's last lease swept: the child, and its parent, dead.
    const swept = await enqueueFlow(engine, parentName, [
      child(childName, { n: 3 }, { options: { maxAttempts: 1, leaseMs: 1_000 } }),
    ]);
    const expiring = await claimOne(engine, childName);
    clock.advance(2_000);
    await engine.sweepExpiredLeases();
    expect(finished.get(expiring.id)).toBe('dead');
    await expect.poll(() => finished.get(swept.id)).toBe('dead');
  });
}
