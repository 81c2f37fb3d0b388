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
  'sent rate',
  'unstarted',
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

const unitOf = (figure: SteadyFigure): Measurement['unit'] =>
  figure === 'achieved rate' || figure === 'sent rate' ? 'jobs/s' : figure === 'unstarted' ? 'jobs' : 'ms';

/** What an open-loop schedule of sends did: when each send was due, which were sent and how late they started. */
interface Schedule {
  dueAt(n: number): number;
  /** When the window closed: every send was due before it. */
  endAt: number;
  /** Sends started, n = 0 … sent-1, late ones included; the sends due after them were never started. */
  sent: number;
  /** Of those, the sends started before the window closed. */
  sentInWindow: number;
  /** How late each started send began after its due time, in ms. */
  lagMs: Float64Array;
  /** Settles once every started send has; rejects if any failed. */
  settled: Promise<void>;
}

/**
 * The producer's sends outstanding at most, as a pool of connections bounds them: without a bound, a system that
 * falls behind queues sends in its client until they time out, and the row reports failed sends, not latency.
 */
const STEADY_MAX_IN_FLIGHT = 200;

/**
 * Starts `send(n)` for n = 0 … count-1 at `intervalMs` apart, open loop: no send waits for an earlier one to
 * finish (up to `STEADY_MAX_IN_FLIGHT` outstanding), and a send whose time has passed, while the event loop was
 * busy or every slot was taken, starts as soon as it can, so a late start shows in that job's latency (timed from
 * when it was due). The window closes at `count × intervalMs`; sends due in it and not yet started may still start
 * for `lateMs` after it (a producer a few ms late at the end is timed, not dropped), and those still due then are
 * never started. The schedule then resolves, without waiting for the system to take what was sent (`settled`
 * does). `onDue(n)` runs just before send n starts.
 */
async function sendOnSchedule(
  count: number,
  intervalMs: number,
  lateMs: number,
  send: (n: number) => Promise<void>,
  onDue: (n: number) => void,
): Promise<Schedule> {
  const origin = performance.now();
  const dueAt = (n: number) => origin + n * intervalMs;
  const endAt = dueAt(count);
  const sendUntil = endAt + lateMs;
  const lagMs = new Float64Array(count);
  const failures: unknown[] = [];
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  let sentInWindow = 0;
  while (n < count && performance.now() < sendUntil) {
    const wait = dueAt(n) - performance.now();
    if (wait > 0) {
      await sleep(wait);
      continue;
    }
    if (inFlight.size >= STEADY_MAX_IN_FLIGHT) {
      await Promise.race([...inFlight, sleep(sendUntil - performance.now())]);
      continue;
    }
    onDue(n);
    const now = performance.now();
    lagMs[n] = now - dueAt(n);
    if (now < endAt) sentInWindow = n + 1;
    const sent = send(n).catch((error: unknown) => void failures.push(error));
    inFlight.add(sent);
    void sent.then(() => inFlight.delete(sent));
    n++;
  }
  const settled = Promise.all(inFlight).then(() => {
    if (failures.length === 0) return;
    const first = failures[0] instanceof Error ? failures[0].message : String(failures[0]);
    throw new Error(`${failures.length} of ${n} sends failed; the first: ${first}`);
  });
  settled.catch(() => undefined); // read by the scenario after its grace; unread until then
  return { dueAt, endAt, sent: n, sentInWindow, lagMs, settled };
}

/**
 * Steady load: a consumer at concurrency 50 waits; a producer enqueues one job at a time at `rate` per second on
 * an open-loop schedule (`sendOnSchedule`) for the warm-up and then the timed window, and stops at the window's
 * end whatever rate it achieved. The consumer then has `steadyGraceMs` to start what was sent; what it has not
 * started by then is the system's backlog, reported as `unstarted` and counted in every latency figure at what it
 * had waited so far (so those figures become lower bounds), never left out as if it had been fine. Each job's
 * latency runs from when its send was due to when its handler started. Warm-up jobs are checked like the rest but
 * left out of every figure.
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
      let stopAt: number;
      try {
        await sleep(500);
        schedule = await sendOnSchedule(
          total,
          intervalMs,
          config.steadyGraceMs / 2,
          (n) => queue.enqueueOne(n),
          (n) => {
            if (n === warmup) cpu = startCpuMeter(config.cpu);
          },
        );
        // The grace is bounded whatever the backlog. Each handler start is timed as it happens, so the check need
        // not be frequent; a frequent one would put the bench's own wake-ups into the CPU per job.
        const graceEnd = schedule.endAt + config.steadyGraceMs;
        const sent = schedule.sent;
        await Promise.race([schedule.settled.catch(() => undefined), sleep(graceEnd - performance.now())]);
        await waitUntil(() => tracker.handled >= sent, graceEnd - performance.now(), 20).catch(() => undefined);
        stopAt = performance.now();
        cpuPerJob = cpu?.perJob(startedBy(tracker, warmup, total, stopAt));
      } finally {
        await consumer.stop();
      }
      await schedule.settled;
      await waitUntil(async () => (await queue.countCompleted()) >= tracker.handled, 30_000, 100).catch(
        () => undefined,
      );
      tracker.verifySent(await queue.countCompleted(), schedule.sent);
      const { figures, lowerBounds } = steadyFigures({
        startedAt: tracker.startedAt,
        dueAt: schedule.dueAt,
        lagMs: schedule.lagMs,
        warmup,
        total,
        sent: schedule.sent,
        sentInWindow: schedule.sentInWindow,
        stopAt,
        intervalMs,
      });
      return STEADY_FIGURES.map(
        (figure): Measurement => ({
          scenario: steadyLabel(rate, figure),
          concurrency: STEADY_CONCURRENCY,
          value: figures[figure],
          unit: unitOf(figure),
          ...(cpuPerJob && figure === 'achieved rate' ? { cpuPerJob } : {}),
          ...(lowerBounds.has(figure) ? { atLeast: true } : {}),
        }),
      );
    },
  };
}

/** Jobs n = from … to-1 whose handler had started by `stopAt` (a start time of 0 is a job never started). */
function startedBy(tracker: JobTracker, from: number, to: number, stopAt: number): number {
  let started = 0;
  for (let n = from; n < to; n++) {
    const at = tracker.startedAt[n] as number;
    if (at > 0 && at <= stopAt) started++;
  }
  return started;
}

/** What one steady run observed: every job's due time and handler start (0 where it never started). */
export interface SteadyRun {
  startedAt: Float64Array;
  dueAt(n: number): number;
  lagMs: Float64Array;
  /** Jobs n < warmup count in no figure. */
  warmup: number;
  /** Jobs offered: due before the window closed. */
  total: number;
  /** Jobs sent: n < sent. */
  sent: number;
  /** Jobs sent before the window closed: n < sentInWindow. */
  sentInWindow: number;
  /** When the scenario stopped waiting: a handler start after it counts as not started. */
  stopAt: number;
  intervalMs: number;
}

/**
 * Each figure of the timed jobs (n from `warmup` on, every one due in the window, sent or not). A job not started
 * by `stopAt` — sent and not taken, or never sent because the producer fell behind — is `unstarted` and counts in
 * the latency figures with `stopAt − due`, what it had waited when the scenario stopped: a lower bound, so a
 * percentile over it is a lower bound too, and a backlog raises the figures instead of leaving them. The
 * achieved rate is the jobs started over the span from the first one's due time to the last start or the window's
 * end, whichever is later (plus one interval); the sent rate is the sends started over the window. `lowerBounds`
 * names the latency figures that count an unstarted job.
 */
export function steadyFigures(run: SteadyRun): {
  figures: Record<SteadyFigure, number>;
  lowerBounds: ReadonlySet<SteadyFigure>;
} {
  const { startedAt, dueAt, warmup, total, sent, sentInWindow, stopAt, intervalMs } = run;
  const timed = total - warmup;
  const latencies = new Array<number>(timed);
  const unstarted: number[] = [];
  let started = 0;
  let lastStart = dueAt(total - 1);
  for (let i = 0; i < timed; i++) {
    const n = warmup + i;
    const at = startedAt[n] as number;
    if (n < sent && at > 0 && at <= stopAt) {
      latencies[i] = at - dueAt(n);
      started++;
      lastStart = Math.max(lastStart, at);
    } else {
      latencies[i] = stopAt - dueAt(n);
      unstarted.push(i);
    }
  }
  const spanMs = lastStart - dueAt(warmup) + intervalMs;
  const third = Math.floor(timed / 3);
  const lowerBounds = new Set<SteadyFigure>();
  if (unstarted.length > 0) for (const figure of ['p50', 'p99', 'max'] as const) lowerBounds.add(figure);
  if (unstarted.some((i) => i < third)) lowerBounds.add('p99, first third');
  if (unstarted.some((i) => i >= timed - third)) lowerBounds.add('p99, last third');
  const figures: Record<SteadyFigure, number> = {
    'achieved rate': (started / spanMs) * 1000,
    'sent rate': (Math.max(0, sentInWindow - warmup) / (timed * intervalMs)) * 1000,
    unstarted: unstarted.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: percentile(latencies, 100),
    'p99, first third': percentile(latencies.slice(0, third), 99),
    'p99, last third': percentile(latencies.slice(timed - third), 99),
    'send lag p99': percentile(Array.from(run.lagMs.subarray(warmup, Math.max(warmup, sent))), 99),
  };
  return { figures, lowerBounds };
}
