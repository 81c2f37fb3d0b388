import type { RunConfig } from '../config.ts';
import { type CpuTimes, startCpuMeter } from '../cpu-meter.ts';
import { percentile, sleep, waitUntil } from '../stats.ts';
import type { QueueUnderTest } from '../systems/types.ts';
import { JobTracker } from './tracker.ts';
import type { Measurement, Scenario } from './types.ts';

/** The systems steady load compares: workq's product path on both SQL stores and the peers of issue 49. */
const STEADY_SYSTEMS = [
  'workq-sdk-pg',
  'workq-sdk-mariadb',
  'bullmq-redis',
  'pg-boss-pg',
  'graphile-worker-pg',
] as const;
/** Consumer concurrency, as in the c=50 drain: every system drains well above 3,000 jobs/s with it. */
export const STEADY_CONCURRENCY = 50;

/** The figures of one rate, in the order their rows are reported. */
export const STEADY_FIGURES = [
  'achieved rate',
  'p50',
  'p99',
  'max',
  'p99, first third',
  'p99, last third',
  'send lag p99',
] as const;
export type SteadyFigure = (typeof STEADY_FIGURES)[number];

export function steadyLabel(rate: number, figure: SteadyFigure): string {
  return `steady ${rate.toLocaleString('en-US')}/s, ${figure}`;
}

const unitOf = (figure: SteadyFigure): Measurement['unit'] => (figure === 'achieved rate' ? 'jobs/s' : 'ms');

/** What an open-loop schedule of sends did: when each send was due and how late it started. */
interface Schedule {
  dueAt(n: number): number;
  /** How late each send started after its due time, in ms. */
  lagMs: Float64Array;
}

/**
 * The producer's sends outstanding at most, as a pool of connections bounds them: without a bound, a system that
 * falls behind queues sends in its client until they time out, and the row reports failed sends, not latency.
 */
const STEADY_MAX_IN_FLIGHT = 200;

/**
 * Starts `send(n)` for n = 0 … count-1 at `intervalMs` apart, open loop: no send waits for an earlier one to
 * finish (up to `STEADY_MAX_IN_FLIGHT` outstanding), and a send whose time has passed, while the event loop was
 * busy or every slot was taken, starts as soon as it can rather than being skipped, so a late start shows in that
 * job's latency (timed from when it was due) instead of as fewer sends. `onDue(n)` runs just before send n
 * starts. Resolves once every send has settled; rejects if any failed.
 */
async function sendOnSchedule(
  count: number,
  intervalMs: number,
  send: (n: number) => Promise<void>,
  onDue: (n: number) => void,
): Promise<Schedule> {
  const origin = performance.now();
  const dueAt = (n: number) => origin + n * intervalMs;
  const lagMs = new Float64Array(count);
  const failures: unknown[] = [];
  const inFlight = new Set<Promise<void>>();
  for (let n = 0; n < count; ) {
    const wait = dueAt(n) - performance.now();
    if (wait > 0) {
      await sleep(wait);
      continue;
    }
    if (inFlight.size >= STEADY_MAX_IN_FLIGHT) {
      await Promise.race(inFlight);
      continue;
    }
    onDue(n);
    lagMs[n] = performance.now() - dueAt(n);
    const sent = send(n).catch((error: unknown) => void failures.push(error));
    inFlight.add(sent);
    void sent.then(() => inFlight.delete(sent));
    n++;
  }
  await Promise.all(inFlight);
  if (failures.length > 0) {
    const first = failures[0] instanceof Error ? failures[0].message : String(failures[0]);
    throw new Error(`${failures.length} of ${count} sends failed; the first: ${first}`);
  }
  return { dueAt, lagMs };
}

/**
 * Steady load: a consumer at concurrency 50 waits; a producer enqueues one job at a time at `rate` per second on
 * an open-loop schedule (`sendOnSchedule`) for the warm-up and then the timed span; each job's latency runs from
 * when its send was due to when its handler started. Warm-up jobs are checked like the rest but left out of every
 * figure. The achieved rate is the timed jobs over the span from the first one's due time to the last handler
 * start (plus one interval), so a backlog that builds up lowers it.
 */
export function steadyLoadScenario(rate: number): Scenario {
  const rows = STEADY_FIGURES.map((figure) => ({
    scenario: steadyLabel(rate, figure),
    concurrency: STEADY_CONCURRENCY,
    unit: unitOf(figure),
  }));
  return {
    id: `steady-${rate}`,
    systems: STEADY_SYSTEMS,
    rows: () => rows,
    async run(queue: QueueUnderTest, config: RunConfig) {
      const warmup = Math.round((rate * config.steadyWarmupMs) / 1000);
      const timed = Math.round((rate * config.steadyDurationMs) / 1000);
      const total = warmup + timed;
      const intervalMs = 1000 / rate;
      const tracker = new JobTracker(total);
      const consumer = await queue.consume(STEADY_CONCURRENCY, tracker.onJob);
      let cpu: ReturnType<typeof startCpuMeter> | undefined;
      let cpuPerJob: CpuTimes | undefined;
      let schedule: Schedule;
      try {
        await sleep(500);
        schedule = await sendOnSchedule(
          total,
          intervalMs,
          (n) => queue.enqueueOne(n),
          (n) => {
            if (n === warmup) cpu = startCpuMeter(config.cpu);
          },
        );
        // Bounded: a system that falls this far behind the schedule fails the row rather than holding the run.
        // Each handler start is timed as it happens, so the check need not be frequent; a frequent one would put
        // the bench's own wake-ups into the CPU per job of a system that takes long to catch up.
        await waitUntil(() => tracker.done, 60_000 + 2 * config.steadyDurationMs, 20);
        cpuPerJob = cpu?.perJob(timed);
      } finally {
        await consumer.stop();
      }
      await waitUntil(async () => (await queue.countCompleted()) >= total, 30_000, 100).catch(() => undefined);
      tracker.verify(await queue.countCompleted());
      return steadyFigures(tracker, schedule, warmup, intervalMs).map(
        ([figure, value]): Measurement => ({
          scenario: steadyLabel(rate, figure),
          concurrency: STEADY_CONCURRENCY,
          value,
          unit: unitOf(figure),
          ...(cpuPerJob && figure === 'achieved rate' ? { cpuPerJob } : {}),
        }),
      );
    },
  };
}

/** Each figure of the timed jobs (n from `warmup` on), from their due times and handler starts. */
function steadyFigures(
  tracker: JobTracker,
  schedule: Schedule,
  warmup: number,
  intervalMs: number,
): [SteadyFigure, number][] {
  const timed = tracker.expected - warmup;
  const latencies = Array.from(
    { length: timed },
    (_, i) => (tracker.startedAt[warmup + i] as number) - schedule.dueAt(warmup + i),
  );
  let lastStart = 0;
  for (let n = warmup; n < tracker.expected; n++) lastStart = Math.max(lastStart, tracker.startedAt[n] as number);
  const spanMs = lastStart - schedule.dueAt(warmup) + intervalMs;
  const third = Math.floor(timed / 3);
  const figures: Record<SteadyFigure, number> = {
    'achieved rate': (timed / spanMs) * 1000,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: percentile(latencies, 100),
    'p99, first third': percentile(latencies.slice(0, third), 99),
    'p99, last third': percentile(latencies.slice(timed - third), 99),
    'send lag p99': percentile(Array.from(schedule.lagMs.subarray(warmup)), 99),
  };
  return STEADY_FIGURES.map((figure) => [figure, figures[figure]]);
}
