import type { RunConfig } from '../config.ts';
import { waitUntil } from '../stats.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import { fillQueue, timeDrain } from './drain.ts';
import type { Scenario } from './types.ts';

export const EVENTS_DRAIN_LABEL = 'drain, one events subscriber';

/**
 * The drain at concurrency 50 with one live-events subscriber attached for
 * the whole of it (it receives every job's events and counts them), to
 * compare with the plain drain: events must not slow the queue.
 */
export const eventsDrainScenario: Scenario = {
  id: 'drain-events',
  needs: 'events',
  rows: () => [{ scenario: EVENTS_DRAIN_LABEL, concurrency: 50, unit: 'jobs/s' }],
  async run(queue: QueueUnderTest, config: RunConfig) {
    const watcher = await (queue.watchEvents as NonNullable<QueueUnderTest['watchEvents']>)();
    try {
      await fillQueue(queue, config.jobs);
      // The subscriber is attached once it has seen the fill's first `enqueued` events.
      await waitUntil(() => watcher.received() > 0, 30_000, 10);
      const before = watcher.received();
      const { jobsPerSecond, cpuPerJob } = await timeDrain(queue, config.jobs, 50, { measureCpu: config.cpu });
      const during = watcher.received() - before;
      if (during === 0) throw new Error('the events subscriber received nothing while the queue drained');
      return [{ scenario: EVENTS_DRAIN_LABEL, concurrency: 50, value: jobsPerSecond, unit: 'jobs/s', cpuPerJob }];
    } finally {
      await watcher.stop();
    }
  },
};
