import type { RunConfig } from '../config.ts';
import { waitUntil } from '../stats.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import { fillQueue, timeDrain } from './drain.ts';
import type { Scenario } from './types.ts';

export const EVENTS_DRAIN_LABEL = 'drain, one events subscriber';

/**
 * The drain at concurrency 50 with `subscribers` live-events subscribers
 * attached for the whole of it (each receives every job's events and counts
 * them), to compare with the plain drain: events must not slow the queue,
 * and what the server spends on them should grow slowly with subscribers
 * (each event's bytes are made once for all of them).
 */
export function eventsDrainScenario(subscribers: number): Scenario {
  const label = subscribers === 1 ? EVENTS_DRAIN_LABEL : `drain, ${subscribers} events subscribers`;
  return {
    id: subscribers === 1 ? 'drain-events' : `drain-events-${subscribers}`,
    needs: 'events',
    rows: () => [{ scenario: label, concurrency: 50, unit: 'jobs/s' }],
    async run(queue: QueueUnderTest, config: RunConfig) {
      const watchEvents = queue.watchEvents as NonNullable<QueueUnderTest['watchEvents']>;
      const watchers = await Promise.all(Array.from({ length: subscribers }, () => watchEvents()));
      try {
        await fillQueue(queue, config.jobs);
        // The subscribers are attached once each has seen the fill's first `enqueued` events.
        await waitUntil(() => watchers.every((watcher) => watcher.received() > 0), 30_000, 10);
        const before = watchers.map((watcher) => watcher.received());
        const { jobsPerSecond, cpuPerJob } = await timeDrain(queue, config.jobs, 50, { measureCpu: config.cpu });
        if (watchers.some((watcher, i) => watcher.received() === before[i])) {
          throw new Error('an events subscriber received nothing while the queue drained');
        }
        return [{ scenario: label, concurrency: 50, value: jobsPerSecond, unit: 'jobs/s', cpuPerJob }];
      } finally {
        await Promise.all(watchers.map((watcher) => watcher.stop()));
      }
    },
  };
}
