import type { RunConfig } from '../config.ts';
import type { CpuTimes } from '../cpu-meter.ts';
import type { BenchSystem, QueueUnderTest } from '../systems/types.ts';

/** One figure from one repetition. */
export interface Measurement {
  scenario: string;
  concurrency: number;
  value: number;
  /** `jobs`: a count of jobs, lower is better. */
  unit: 'jobs/s' | 'ms' | 'jobs';
  /** The value is a lower bound: it counts jobs that had not started when the scenario stopped waiting. */
  atLeast?: true;
  /** With `--cpu`: each process group's CPU over the timed part, in µs per job. */
  cpuPerJob?: CpuTimes;
}

export interface Scenario {
  id: string;
  /** Which capability it needs; systems without it get a "not available" row. */
  needs?: 'latency' | 'claim' | 'history' | 'events' | 'flow' | 'limitedClaim' | 'flows';
  /** The only systems it runs on, where it compares a chosen set; the others get no row for it. */
  systems?: readonly string[];
  /** The rows it reports, for "not available" / "failed" rows. */
  rows(config: RunConfig): Omit<Measurement, 'value'>[];
  /** Runs on a fresh queue; throws if the run's own checks fail. */
  run(queue: QueueUnderTest, config: RunConfig, system: BenchSystem): Promise<Measurement[]>;
}
