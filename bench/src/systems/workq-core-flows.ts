import type { ClaimedJob, Engine } from '@workq/core/engine';
import { startBatchConsumer, type WakeSignal } from './batch-consumer.ts';
import type { FlowChild, FlowsUnderTest } from './types.ts';

const PARENT = 'benchParent';
const CHILD = 'benchChild';

/**
 * Flows straight through `Engine`, in this process: a parent and its children in one `engine.flows.enqueue`,
 * children and parents each drained by the batch consumer the drains use (claim a round, run it, ack it in one
 * call), a child's payload acked as its result, and a parent reading its children's through `engine.flows.children`.
 */
export function coreFlows(
  engine: Engine,
  wake: WakeSignal,
  workerId: string,
  countCompleted: () => Promise<number>,
): FlowsUnderTest {
  const claimOf = (name: string) => (limit: number) => engine.claim({ name, maxVersion: 1, limit, workerId });
  const ack = async (jobs: readonly ClaimedJob[], result: (job: ClaimedJob) => unknown) => {
    await engine.completeMany(jobs.map((job) => ({ id: job.id, leaseToken: job.leaseToken, result: result(job) })));
  };
  const waitForWork = (ms: number) => wake.wait(ms);
  return {
    enqueueFlow: async (p, children) => {
      await engine.flows.enqueue({
        name: PARENT,
        version: 1,
        payload: { p },
        children: Array.from({ length: children }, (_, c) => ({ name: CHILD, version: 1, payload: { p, c } })),
      });
    },
    consume: async (concurrency, listener) => {
      const children = startBatchConsumer({
        concurrency: concurrency.children,
        claim: claimOf(CHILD),
        handle: (job) => listener.onChild(job.payload as FlowChild),
        ack: (jobs) => ack(jobs, (job) => job.payload),
        waitForWork,
      });
      const parents = startBatchConsumer({
        concurrency: concurrency.parents,
        claim: claimOf(PARENT),
        handle: (job) =>
          listener.onParent((job.payload as { p: number }).p, async () =>
            (await engine.flows.children(job.id, { limit: 10_000 })).map((child) => child.result as FlowChild),
          ),
        ack: (jobs) => ack(jobs, () => undefined),
        waitForWork,
      });
      return { stop: () => Promise.all([children.stop(), parents.stop()]).then(() => undefined) };
    },
    countCompleted,
  };
}
