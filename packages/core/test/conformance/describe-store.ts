import { afterAll, beforeAll, beforeEach, describe } from 'vitest';
import { registerClaimingTests } from './claiming.ts';
import { SuiteState } from './context.ts';
import { registerDeduplicationTests } from './deduplication.ts';
import { registerDeduplicationModeTests } from './deduplication-modes.ts';
import { registerDurabilityTests } from './durability.ts';
import { registerFencingTests } from './fencing.ts';
import { registerFinishedTests } from './finished.ts';
import { registerFlowAcrossServerTests } from './flow-across-servers.ts';
import { registerFlowControlTests } from './flow-control.ts';
import { registerFlowEventTests } from './flow-events.ts';
import { registerFlowGroupTests } from './flow-groups.ts';
import { registerFlowStrictOrderTests } from './flow-strict-order.ts';
import { registerFlowTimeLimitTests } from './flow-time-limits.ts';
import { registerFlowTests } from './flows.ts';
import { registerHandlerSchedulingTests } from './handler-scheduling.ts';
import type { StoreHarness } from './harness.ts';
import { registerHealthTests } from './health.ts';
import { registerHeldChildrenTests } from './held-children.ts';
import { registerIdempotencyTests } from './idempotency.ts';
import { registerJobIdTests } from './job-ids.ts';
import { registerJobManagementTests } from './job-management.ts';
import { registerLeadershipTests } from './leadership.ts';
import { registerLifecycleTests } from './lifecycle.ts';
import { registerOrderingTests } from './ordering.ts';
import { registerRegistryTests } from './registries.ts';
import { registerRetentionTests } from './retention.ts';
import { registerRetryTests } from './retries.ts';
import { registerScaleTests } from './scale.ts';
import { registerScheduleTests } from './schedules.ts';
import { registerTimeTests } from './time.ts';
import { registerTimeBoundTests } from './time-bounds.ts';
import { registerTimeLimitTests } from './time-limits.ts';
import { registerTraceContextTests } from './trace-context.ts';
import { registerVersionTests } from './versions.ts';
import { registerWorkerBoundTests } from './worker-bounds.ts';

export type { StoreHarness } from './harness.ts';

export interface DescribeStoreOptions {
  /** Set when the store cannot be reached here; every test is registered as skipped, with this reason. */
  skipReason?: string;
  /**
   * Tests this store does not pass yet, by title, each with what stops it
   * (the bug, or the limit of where it runs): reported as skipped with that
   * reason, never as passed.
   */
  knownFailures?: Readonly<Record<string, string>>;
}

/**
 * The conformance suite: every store runs these tests, which prove the
 * queue's guarantees (one holder, fencing, nothing lost, done is done, order,
 * retries, time, idempotency, versions, claim cost, flow control, flows) through
 * the engine (and through the store interface where that is the clearest
 * proof). A store's test file is one
 * call, e.g. `describeStore('postgres', () => makePostgresHarness())`.
 */
export function describeStore(
  label: string,
  makeHarness: () => Promise<StoreHarness>,
  options: DescribeStoreOptions = {},
): void {
  const state = new SuiteState(label);
  const register = (): void => {
    describe('1. one holder', () => registerClaimingTests(state));
    describe('2. fencing', () => registerFencingTests(state));
    describe('3. nothing lost', () => registerDurabilityTests(state));
    describe('4. done is done', () => registerFinishedTests(state));
    describe('5. order', () => registerOrderingTests(state));
    describe('6. retries', () => registerRetryTests(state));
    describe('7. time', () => registerTimeTests(state));
    describe('time bounds: leases and run times', () => registerTimeBoundTests(state));
    describe('time limits: a handler past its timeoutMs', () => registerTimeLimitTests(state));
    describe('8. idempotency', () => registerIdempotencyTests(state));
    describe('caller-chosen job ids', () => registerJobIdTests(state));
    describe('deduplication: key TTLs and debounce', () => registerDeduplicationTests(state));
    describe('deduplication: keys until finished and debounce modes', () => registerDeduplicationModeTests(state));
    describe('9. versions', () => registerVersionTests(state));
    describe('job lifecycle', () => registerLifecycleTests(state));
    describe('job management: retry in place, restore, remove by key', () => registerJobManagementTests(state));
    describe('retention per job and per type', () => registerRetentionTests(state));
    describe('registries', () => registerRegistryTests(state));
    describe('worker registry bounds', () => registerWorkerBoundTests(state));
    describe('schedules', () => registerScheduleTests(state));
    describe('health', () => registerHealthTests(state));
    describe('leadership', () => registerLeadershipTests(state));
    describe('trace context', () => registerTraceContextTests(state));
    describe('flow control', () => registerFlowControlTests(state));
    describe('flow control: groups', () => registerFlowGroupTests(state));
    describe('flow control: strict group order', () => registerFlowStrictOrderTests(state));
    describe('flow control: across servers', () => registerFlowAcrossServerTests(state));
    describe('handler-driven scheduling: delays and holds', () => registerHandlerSchedulingTests(state));
    describe('flows: parents and children', () => registerFlowTests(state));
    describe('flows: a held parent reads its children', () => registerHeldChildrenTests(state));
    describe('flows: events', () => registerFlowEventTests(state));
    describe('flows: a child past its time limit', () => registerFlowTimeLimitTests(state));
    describe('10. scale', () => registerScaleTests(state));
  };

  if (options.skipReason !== undefined) {
    console.log(`${label}: skipped — ${options.skipReason}`);
    describe.skip(`${label}: skipped — ${options.skipReason}`, register);
    return;
  }

  describe(label, () => {
    beforeAll(() => state.start(makeHarness));
    afterAll(() => state.stop());
    beforeEach((context) => {
      const reason = options.knownFailures?.[context.task.name];
      if (reason !== undefined) context.skip(reason);
    });
    register();
  });
}
