import type { RunConfig } from '../config.ts';
import { type CpuTimes, startCpuMeter } from '../cpu-meter.ts';
import { percentile, sleep, waitUntil } from '../stats.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import { JobTracker } from './tracker.ts';
import type { Measurement, Scenario } from './types.ts';

const CONCURRENCY = 10;
const POINTS = [
  ['p50', 50],
  ['p95', 95],
  ['p99', 99],
  ['max', 100],
] as const;

/**
 * Idle enqueue-to-handler-start latency: a waiting consumer, then one job
 * every `latencyGapMs` (on a fixed schedule, not waiting for the previous
 * enqueue), each timed from the moment its enqueue call starts to the moment
 * its handler starts.
 */
export const latencyScenario: Scenario = {
  id: 'latency',
  needs: 'latency',
  rows: () =>
    POINTS.map(([name]) => ({ scenario: `idle latency ${name}`, concurrency: CONCURRENCY, unit: 'ms' as const })),
  async run(queue: QueueUnderTest, config: RunConfig) {
    const jobs = config.latencyJobs;
    const tracker = new JobTracker(jobs);
    const enqueuedAt = new Float64Array(jobs);
    const consumer = await queue.consume(CONCURRENCY, tracker.onJob);
    let cpuPerJob: CpuTimes | undefined;
    try {
      await sleep(500);
      const cpu = startCpuMeter(config.cpu);
      const origin = performance.now();
      const sends: Promise<void>[] = [];
      for (let n = 0; n < jobs; n++) {
        const wait = origin + n * config.latencyGapMs - performance.now();
        if (wait > 0) await sleep(wait);
        enqueuedAt[n] = performance.now();
        sends.push(queue.enqueueOne(n));
      }
      await Promise.all(sends);
      await waitUntil(() => tracker.done, 60_000, 2);
      cpuPerJob = cpu.perJob(jobs);
    } finally {
      await consumer.stop();
    }
    await waitUntil(async () => (await queue.countCompleted()) >= jobs, 30_000, 100).catch(() => undefined);
    tracker.verify(await queue.countCompleted());
    const latencies = Array.from(
      { length: jobs },
      (_, n) => (tracker.startedAt[n] as number) - (enqueuedAt[n] as number),
    );
    return POINTS.map(
      ([name, p]): Measurement => ({
        scenario: `idle latency ${name}`,
        concurrency: CONCURRENCY,
        value: percentile(latencies, p),
        unit: 'ms',
        ...(cpuPerJob && name === 'p50' ? { cpuPerJob } : {}),
      }),
    );
  },
};
