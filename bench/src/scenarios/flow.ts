import type { RunConfig } from '../config.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import { fillQueue, timeDrain } from './drain.ts';
import type { Measurement, Scenario } from './types.ts';

const BULK = 1000;
const GROUPS = 100;
const GROUPS_CONCURRENCY = 50;
const LIMIT = 20;

/** Enqueues n = 0 … count-1 spread over `groups` groups, each group's jobs in one range (not timed). */
async function fillGroups(queue: QueueUnderTest, count: number, groups: number): Promise<void> {
  const enqueue = queue.enqueueGroupedBulk as NonNullable<QueueUnderTest['enqueueGroupedBulk']>;
  const perGroup = Math.ceil(count / groups);
  for (let g = 0; g < groups; g++) {
    const end = Math.min(count, (g + 1) * perGroup);
    for (let from = g * perGroup; from < end; from += BULK) {
      await enqueue(from, Math.min(BULK, end - from), `g${g}`);
    }
  }
}

export type FlowKind = 'groups' | 'concurrency';

/** The two rows of a flow scenario: the limited drain, its plain twin, and the consumer concurrency of both. */
export function flowRows(kind: FlowKind): { limited: string; plain: string; concurrency: number } {
  return kind === 'groups'
    ? {
        limited: `drain, ${GROUPS} groups, groupConcurrency 1`,
        plain: 'drain, no limits (groups twin)',
        concurrency: GROUPS_CONCURRENCY,
      }
    : {
        limited: `drain, concurrency limit ${LIMIT}`,
        plain: 'drain, no limits (concurrency twin)',
        concurrency: LIMIT,
      };
}

/**
 * Flow control (issue 32), each limited drain beside a plain one on the same queue in the same scenario, so
 * the two compare under the same conditions: first the jobs drain with no limits set (the plain claim), then
 * the limits are set and as many jobs again drain under them (the limited claim).
 * - `groups`: jobs spread over 100 groups, `groupConcurrency: 1`, consumer concurrency 50.
 * - `concurrency`: `concurrency: 20`, consumer concurrency 20.
 */
export function flowScenario(kind: FlowKind): Scenario {
  const { concurrency, limited, plain } = flowRows(kind);
  return {
    id: `flow-${kind}`,
    needs: 'flow',
    rows: () => [
      { scenario: plain, concurrency, unit: 'jobs/s' },
      { scenario: limited, concurrency, unit: 'jobs/s' },
    ],
    async run(queue: QueueUnderTest, config: RunConfig): Promise<Measurement[]> {
      const setLimits = queue.setLimits as NonNullable<QueueUnderTest['setLimits']>;
      await fillQueue(queue, config.jobs);
      const before = await timeDrain(queue, config.jobs, concurrency, { measureCpu: config.cpu });
      if (kind === 'groups') {
        await setLimits({ groupConcurrency: 1 });
        await fillGroups(queue, config.jobs, GROUPS);
      } else {
        await setLimits({ concurrency: LIMIT });
        await fillQueue(queue, config.jobs);
      }
      const after = await timeDrain(queue, config.jobs, concurrency, {
        expectedCompleted: 2 * config.jobs,
        measureCpu: config.cpu,
      });
      return [
        { scenario: plain, concurrency, value: before.jobsPerSecond, unit: 'jobs/s', cpuPerJob: before.cpuPerJob },
        { scenario: limited, concurrency, value: after.jobsPerSecond, unit: 'jobs/s', cpuPerJob: after.cpuPerJob },
      ];
    },
  };
}
