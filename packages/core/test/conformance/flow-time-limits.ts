import { expect, it } from 'vitest';
import { CHILD_FAILED_CODE } from '../../src/engine/store.ts';
import { timedOutError } from '../../src/engine/timed-out-error.ts';
import type { ChildFailurePolicy } from '../../src/jobs.ts';
import { claimOne, type SuiteContext, type TestEngine } from './context.ts';

/** What the sweep records for a lease that ran out at its attempt's deadline, as every store words it. */
const TIMED_OUT_MESSAGE = timedOutError({ message: '', at: new Date(0) }).message;

/**
 * A parent with two children, the first under `onFailure` with a time limit and no attempt to spare, the
 * second completed; the first is claimed and runs past its limit, and the sweep ends its lease at the deadline.
 */
async function timeOutFirstChild(ctx: SuiteContext, onFailure: ChildFailurePolicy, test: TestEngine) {
  const [parentName, childName] = [ctx.jobName(`${onFailure}-limited-parent`), ctx.jobName(`${onFailure}-limited`)];
  const { engine, clock } = test;
  const options = { timeoutMs: 1_000, leaseMs: 5_000, maxAttempts: 1 };
  const parent = await engine.flows.enqueue({
    name: parentName,
    version: 1,
    payload: {},
    children: [
      { name: childName, version: 1, payload: { n: 1 }, onFailure, options },
      { name: childName, version: 1, payload: { n: 2 } },
    ],
  });
  const [timingOut, fine] = await engine.claim({ name: childName, maxVersion: 1, limit: 2, workerId: 'w' });
  await engine.complete(fine!, { ok: true });
  clock.advance(1_000);
  await engine.sweepExpiredLeases();
  expect(await engine.get(timingOut!.id)).toMatchObject({ state: 'dead', error: { code: 'TIMEOUT', attempt: 1 } });
  return { parent, parentName, childName, timedOut: timingOut!, completed: fine! };
}

/**
 * A child in a flow whose attempt runs past its time limit (`timeoutMs`) and whose lease the sweep ends at the
 * deadline: its parent hears of a `TIMEOUT`, never of a lost lease, on every store.
 */
export function registerFlowTimeLimitTests(ctx: SuiteContext): void {
  it("flows: a child timed out by the sweep, its last attempt, under 'fail-parent': the parent dies naming it and its TIMEOUT", async () => {
    const test = ctx.engine();
    const { parent, childName, timedOut } = await timeOutFirstChild(ctx, 'fail-parent', test);
    const status = await test.engine.get(parent.id);
    expect(status.state).toBe('dead');
    expect(status.error?.code).toBe(CHILD_FAILED_CODE);
    expect(status.error?.message).toBe(`Child job ${timedOut.id} (${childName}) ended dead: ${TIMED_OUT_MESSAGE}`);
    const [listed] = await test.engine.flows.children(parent.id);
    expect(listed?.error).toMatchObject({ code: 'TIMEOUT', message: TIMED_OUT_MESSAGE });
  });

  it("flows: a child timed out by the sweep under 'continue': the parent runs and reads the child's TIMEOUT", async () => {
    const test = ctx.engine();
    const { parent, parentName, timedOut, completed } = await timeOutFirstChild(ctx, 'continue', test);
    const resumed = await claimOne(test.engine, parentName);
    expect(resumed).toMatchObject({ id: parent.id, resumed: true });
    const { children } = await test.engine.flows.heldChildren(resumed, { limit: 10 });
    expect(children.map((c) => [c.id, c.state])).toEqual([
      [timedOut.id, 'dead'],
      [completed.id, 'completed'],
    ]);
    expect(children[0]?.error).toMatchObject({ code: 'TIMEOUT', message: TIMED_OUT_MESSAGE, attempt: 1 });
  });
}
