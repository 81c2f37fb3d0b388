/**
 * The MongoDB smoke: the MongoDB store driven by workq core in this process, under the real `mongodb`
 * driver, against the wire double of `@workq/test-support` (a fake primary in this same process that keeps
 * its data in mingo). No MongoDB server can be had on this project's machines, so this shows only that
 * the store's paths run end to end under the driver, each job handled once: enqueues one at a time and in
 * bulk, a drain, and a drain under a concurrency limit (the fenced claim). Its times are the double's and
 * the driver's, on one thread; they say nothing of MongoDB and are compared with nothing.
 */
import { createEngine, type Engine, openStore } from '@workq/core/engine';
import { startMongoWireDouble } from '@workq/test-support';
import { JobTracker } from './scenarios/tracker.ts';
import { startBatchConsumer, WakeSignal } from './systems/batch-consumer.ts';
import { BENCH_JOB } from './systems/bench-jobs.ts';

/** One step of the smoke: what it did, how many jobs, its wall time, and whether its check held. */
export interface SmokeStep {
  step: string;
  jobs: number;
  wallMs: number;
  check: string;
}

/** How long the smoke waits for a drain before it calls the step failed. */
const DRAIN_LIMIT_MS = 5 * 60_000;
/** Jobs enqueued one call each, before the rest go in bulk calls of `BULK_SIZE`. */
const ONE_AT_A_TIME = 100;
const BULK_SIZE = 1_000;
/** The limited drain: this many jobs under `concurrency: LIMIT`, by a consumer asking for more. */
const LIMITED_JOBS = 200;
const LIMIT = 5;

/** Runs the smoke with `jobs` jobs in the plain drain; every step is run, a failed one says why. */
export async function runMongodbWireSmoke(jobs: number): Promise<SmokeStep[]> {
  const database = 'workq_bench_smoke';
  const double = await startMongoWireDouble({ database });
  const store = await openStore(double.url);
  const engine = createEngine({ store });
  const wake = new WakeSignal();
  const unlisten = engine.onReady(() => wake.wake());
  const steps: SmokeStep[] = [];
  const timed = async (step: string, count: number, work: () => Promise<string>) => {
    const startedAt = performance.now();
    const check = await work().catch((error: unknown) => `failed: ${(error as Error).message.split('\n')[0]}`);
    steps.push({ step, jobs: count, wallMs: performance.now() - startedAt, check });
  };
  try {
    const inputs = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ name: BENCH_JOB, version: 1, payload: { n: from + i } }));
    const oneAtATime = Math.min(ONE_AT_A_TIME, jobs);
    await timed('enqueue, one at a time', oneAtATime, async () => {
      for (const input of inputs(0, oneAtATime)) await engine.enqueue(input);
      return 'ok';
    });
    await timed(`enqueue, bulk ${BULK_SIZE.toLocaleString('en')} per call`, jobs - oneAtATime, async () => {
      for (let from = oneAtATime; from < jobs; from += BULK_SIZE) {
        await engine.enqueueMany(inputs(from, Math.min(BULK_SIZE, jobs - from)));
      }
      return 'ok';
    });
    await timed('drain c=10', jobs, () => drain(engine, wake, jobs, 10, jobs));
    await engine.setLimits(BENCH_JOB, { concurrency: LIMIT });
    await engine.enqueueMany(inputs(jobs, LIMITED_JOBS));
    await timed(`drain c=20 under concurrency ${LIMIT}`, LIMITED_JOBS, () =>
      drain(engine, wake, jobs + LIMITED_JOBS, 20, jobs + LIMITED_JOBS, jobs),
    );
  } finally {
    unlisten();
    await engine.close();
    await double.close();
  }
  return steps;
}

/**
 * Drains jobs numbered `from` up to `expected` with a batch consumer of `concurrency`, then checks each ran
 * once and the store shows `completed` jobs in all.
 */
async function drain(
  engine: Engine,
  wake: WakeSignal,
  expected: number,
  concurrency: number,
  completed: number,
  from = 0,
): Promise<string> {
  const tracker = new JobTracker(expected);
  for (let n = 0; n < from; n++) tracker.onJob(n);
  const consumer = startBatchConsumer({
    concurrency,
    claim: (limit) => engine.claim({ name: BENCH_JOB, maxVersion: 1, limit, workerId: 'bench-smoke' }),
    handle: (job) => tracker.onJob((job.payload as { n: number }).n),
    ack: async (claimed) => {
      await engine.completeMany(claimed.map(({ id, leaseToken }) => ({ id, leaseToken })));
      engine.freed(BENCH_JOB);
    },
    waitForWork: (ms) => wake.wait(ms),
  });
  const deadline = performance.now() + DRAIN_LIMIT_MS;
  while (!tracker.done && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  await consumer.stop();
  const counts = await engine.counts();
  tracker.verify(
    counts.filter((c) => c.state === 'completed').reduce((sum, c) => sum + c.count, 0),
    completed,
  );
  return `ok: each of ${expected - from} jobs once`;
}

/** The smoke's section of the results: what it is, and its steps, with no ratio to anything. */
export function smokeMarkdown(steps: readonly SmokeStep[]): string {
  return [
    '## MongoDB smoke (wire double, not a benchmark)',
    '',
    "workq core on the MongoDB store, under the real `mongodb` driver, against the wire double of `@workq/test-support`: a fake primary in the bench process that keeps its data in mingo. It is no MongoDB server, and no MongoDB server can be had here: these wall times are the double's and the driver's on one thread, say nothing about MongoDB, and are compared with nothing. The smoke shows that the store's enqueue, claim, ack and limited-claim paths run end to end under the driver, each job handled once.",
    '',
    '| step | jobs | wall s | check |',
    '| --- | ---: | ---: | --- |',
    ...steps.map(
      (s) => `| ${s.step} | ${s.jobs.toLocaleString('en')} | ${(s.wallMs / 1000).toFixed(1)} | ${s.check} |`,
    ),
  ].join('\n');
}
