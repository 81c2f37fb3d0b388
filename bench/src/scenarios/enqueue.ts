import type { RunConfig } from '../config.ts';
import { startCpuMeter } from '../cpu-meter.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import { timeDrain } from './drain.ts';
import type { Scenario } from './types.ts';

type Mode = 'one' | 'inflight' | 'bulk';
const IN_FLIGHT = 50;
const BULK = 1000;
const LABELS: Record<Mode, { scenario: string; concurrency: number }> = {
  one: { scenario: 'enqueue, one at a time', concurrency: 1 },
  inflight: { scenario: 'enqueue, 50 in flight', concurrency: IN_FLIGHT },
  bulk: { scenario: 'enqueue, bulk 1,000 per call', concurrency: 1 },
};

async function enqueueAll(queue: QueueUnderTest, jobs: number, mode: Mode): Promise<void> {
  if (mode === 'one') {
    for (let n = 0; n < jobs; n++) await queue.enqueueOne(n);
  } else if (mode === 'bulk') {
    for (let from = 0; from < jobs; from += BULK) await queue.enqueueBulk(from, Math.min(BULK, jobs - from));
  } else {
    let next = 0;
    const lane = async () => {
      while (next < jobs) await queue.enqueueOne(next++);
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  }
}

/** Times enqueueing `jobs` jobs; then drains them (not timed) to check none was lost or doubled. */
export function enqueueScenario(mode: Mode): Scenario {
  const { scenario, concurrency } = LABELS[mode];
  return {
    id: `enqueue-${mode}`,
    rows: () => [{ scenario, concurrency, unit: 'jobs/s' }],
    async run(queue: QueueUnderTest, config: RunConfig) {
      const cpu = startCpuMeter(config.cpu);
      const started = performance.now();
      await enqueueAll(queue, config.jobs, mode);
      const value = (config.jobs / (performance.now() - started)) * 1000;
      const cpuPerJob = cpu.perJob(config.jobs);
      await timeDrain(queue, config.jobs, 50);
      return [{ scenario, concurrency, value, unit: 'jobs/s', cpuPerJob }];
    },
  };
}
