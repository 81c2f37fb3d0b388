import type { RunConfig } from '../config.ts';
import { type CpuTimes, startCpuMeter } from '../cpu-meter.ts';
import { waitUntil } from '../stats.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import { JobTracker } from './tracker.ts';
import type { Scenario } from './types.ts';

const BULK = 1000;

/** Enqueues n = 0 … count-1 in bulk calls (not timed). */
export async function fillQueue(queue: Pick<QueueUnderTest, 'enqueueBulk'>, count: number): Promise<void> {
  for (let from = 0; from < count; from += BULK) await queue.enqueueBulk(from, Math.min(BULK, count - from));
}

/**
 * Starts a consumer on a filled queue and times it until every job's handler
 * has started and the consumer has stopped (flushing its acks); then checks
 * the store. With `measureCpu`, also counts CPU per job over the same span.
 */
export async function timeDrain(
  queue: QueueUnderTest,
  jobs: number,
  concurrency: number,
  {
    expectedCompleted = jobs,
    measureCpu = false,
    holdAtMost,
  }: { expectedCompleted?: number; measureCpu?: boolean; holdAtMost?: number } = {},
): Promise<{ jobsPerSecond: number; cpuPerJob: CpuTimes | undefined }> {
  const tracker = new JobTracker(jobs);
  const cpu = startCpuMeter(measureCpu);
  const started = performance.now();
  const consumer = await queue.consume(concurrency, tracker.onJob, holdAtMost);
  try {
    await waitUntil(() => tracker.done, 300_000, 2);
  } finally {
    // A consumer may close connections it opened (graphile-worker's runner does): their backends are read first.
    cpu.mark();
    await consumer.stop();
  }
  const elapsedMs = performance.now() - started;
  const cpuPerJob = cpu.perJob(jobs);
  await waitUntil(async () => (await queue.countCompleted()) >= expectedCompleted, 30_000, 100).catch(() => undefined);
  tracker.verify(await queue.countCompleted(), expectedCompleted);
  return { jobsPerSecond: (jobs / elapsedMs) * 1000, cpuPerJob };
}

export function drainScenario(concurrency: number): Scenario {
  return {
    id: `drain-c${concurrency}`,
    rows: () => [{ scenario: 'drain', concurrency, unit: 'jobs/s' }],
    async run(queue: QueueUnderTest, config: RunConfig) {
      await fillQueue(queue, config.jobs);
      const { jobsPerSecond, cpuPerJob } = await timeDrain(queue, config.jobs, concurrency, { measureCpu: config.cpu });
      return [{ scenario: 'drain', concurrency, value: jobsPerSecond, unit: 'jobs/s', cpuPerJob }];
    },
  };
}

/** The drain at concurrency 50 with `historyJobs` finished jobs kept in the same table. */
export const historyDrainScenario: Scenario = {
  id: 'drain-history',
  needs: 'history',
  rows: (config) => [{ scenario: historyLabel(config), concurrency: 50, unit: 'jobs/s' }],
  async run(queue, config) {
    await queue.seedFinished?.(config.historyJobs);
    await fillQueue(queue, config.jobs);
    const { jobsPerSecond, cpuPerJob } = await timeDrain(queue, config.jobs, 50, {
      expectedCompleted: config.jobs + config.historyJobs,
      measureCpu: config.cpu,
    });
    return [{ scenario: historyLabel(config), concurrency: 50, value: jobsPerSecond, unit: 'jobs/s', cpuPerJob }];
  },
};

export function historyLabel(config: RunConfig): string {
  return `drain, ${config.historyJobs.toLocaleString('en-US')} finished kept`;
}
