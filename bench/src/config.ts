import { parseArgs } from 'node:util';

/** Where the local services are, and the run's settings, resolved once from the command line. */
export const SERVICES = {
  postgresUrl: 'postgres://postgres@127.0.0.1:5432/test',
  mysqlUrl: 'mysql://root@127.0.0.1:3306',
  redis: { host: '127.0.0.1', port: 6379 },
} as const;

export interface RunConfig {
  quick: boolean;
  /** Interleaved repetitions of every scenario; the figure is their median. */
  repetitions: number;
  /** Jobs per enqueue and drain scenario. */
  jobs: number;
  /** Jobs in the idle-latency scenario, enqueued `latencyGapMs` apart. */
  latencyJobs: number;
  latencyGapMs: number;
  /** Ready-job counts for the claim-latency scenario. */
  claimSizes: readonly number[];
  /** Claims timed at each size. */
  claimSamples: number;
  /** Finished jobs kept as history in the history-drain scenario. */
  historyJobs: number;
  /** Offered rates of the steady-load scenarios, jobs per second. */
  steadyRates: readonly number[];
  /** Steady load's timed span at each rate, after `steadyWarmupMs` at the same rate that no figure counts. */
  steadyDurationMs: number;
  steadyWarmupMs: number;
  /**
   * How long steady load waits, after its window closed, for the consumer to start what was sent; the jobs it has
   * not started by then are that system's backlog (`unstarted`).
   */
  steadyGraceMs: number;
  /** Only the systems these pick (comma list; see `pickedBy`), if given. */
  only: readonly string[];
  /** Only the scenarios these pick (comma list; see `pickedBy`), if given. */
  scenarios: readonly string[];
  /** Write a CPU profile of the bench process and the workq server child, and time round trips. */
  profile: boolean;
  /** Count CPU time per job in each process group (bench, workq server, databases) over the timed part. */
  cpu: boolean;
  /**
   * Run the MongoDB smoke on the wire double (`mongodb-wire-smoke.ts`): alone with `--mongodb-smoke`, after
   * the comparative run with `--quick` unless `--no-mongodb-smoke` says not to.
   */
  mongodbSmoke: 'only' | 'after' | 'no';
}

export const USAGE = `Usage: pnpm bench [options]
  --quick                 1 repetition, 2,000 jobs, smaller claim/history sizes; ends with the MongoDB smoke
  --no-mongodb-smoke      with --quick: leave the MongoDB smoke out
  --mongodb-smoke         only the MongoDB smoke on the wire double
  --only=a,b              only these systems: an exact id picks that one, other words every id containing them
  --scenarios=a,b         only these scenarios, picked as --only picks systems
  --jobs=N                jobs per enqueue and drain scenario
  --repetitions=N         interleaved repetitions of every scenario
  --cpu                   CPU per job by process
  --profile               CPU profiles and per-round-trip timings
  --help                  this text

Scenarios (ids for --scenarios): enqueue-one, enqueue-inflight, enqueue-bulk, drain-c1, drain-c10, drain-c50,
latency, claim-<ready>, drain-history, drain-events, drain-events-20, flow-groups, flow-concurrency, flow-claim,
flows-wide, flows-many, steady-1000, steady-3000.
  flows-wide, flows-many  parents that wait for their children: one parent with 1,000 children (wide), 100
                          parents with 10 children each (many), enqueued one flow per call while a consumer of
                          children (concurrency 50) and one of parents (10) run; each parent reads its
                          children's results. Rows: children drained per second (first enqueue to last child's
                          end), last child's end → parent's start (p50 over the parents, and max) and → the
                          parent holding its children's results (p50). Checks each job ran once and each
                          parent read all its children's results.
                          Runs on workq-sdk-pg, workq-core-pg (for reference) and bullmq-redis (FlowProducer).
  steady-<rate>           steady load: a producer enqueues one job at a time at <rate>/s on an open-loop
                          schedule (a late send goes as soon as it can and counts late; at most 200
                          outstanding) for 20 s (5 s with --quick) after 1 s of warm-up, while a consumer at
                          concurrency 50 drains; the producer stops at the window's end whatever it achieved,
                          and the consumer has 2 s of grace after it. Each job timed from when its send was due
                          to its handler's start; a job not started by the grace's end counts as unstarted, at
                          what it had waited (its latency figures then read "≥"). Rows: achieved rate, sent
                          rate, unstarted, p50, p99, max, p99 of the first and last third, send lag p99.
                          Runs on workq-sdk-pg, workq-sdk-mariadb, bullmq-redis, pg-boss-pg, graphile-worker-pg.`;

/**
 * The configuration `argv` asks for, or `null` when it asks for help. An unknown option throws rather than
 * starting a full run the caller did not ask for.
 */
export function resolveConfig(argv: readonly string[]): RunConfig | null {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      cpu: { type: 'boolean', default: false },
      'mongodb-smoke': { type: 'boolean' },
      only: { type: 'string' },
      scenarios: { type: 'string' },
      jobs: { type: 'string' },
      repetitions: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    allowNegative: true,
    strict: true,
  });
  if (values.help) return null;
  const quick = values.quick === true;
  const list = (value: string | undefined) => value?.split(',') ?? [];
  const { repetitions, jobs } = values;
  const smoke = values['mongodb-smoke'];
  return {
    quick,
    repetitions: repetitions ? Number(repetitions) : quick ? 1 : 3,
    jobs: jobs ? Number(jobs) : quick ? 2_000 : 10_000,
    latencyJobs: quick ? 100 : 500,
    latencyGapMs: 5,
    claimSizes: quick ? [1_000, 10_000] : [1_000, 100_000, 1_000_000],
    claimSamples: quick ? 50 : 300,
    historyJobs: quick ? 10_000 : 1_000_000,
    steadyRates: [1_000, 3_000],
    steadyDurationMs: quick ? 5_000 : 20_000,
    steadyWarmupMs: 1_000,
    steadyGraceMs: 2_000,
    only: list(values.only),
    scenarios: list(values.scenarios),
    profile: values.profile === true,
    cpu: values.cpu === true,
    mongodbSmoke: smoke === true ? 'only' : quick && smoke !== false ? 'after' : 'no',
  };
}

/**
 * Whether `id` is picked by `words`: an empty list picks every id; a word equal to some id picks that id alone
 * (`workq-core-pg` is not `workq-core-pglite`, `drain-c1` not `drain-c10`); any other word picks every id that
 * contains it.
 */
export function pickedBy(words: readonly string[], ids: readonly string[]): (id: string) => boolean {
  if (words.length === 0) return () => true;
  const exact = new Set(words.filter((word) => ids.includes(word)));
  const partial = words.filter((word) => !exact.has(word));
  return (id) => exact.has(id) || partial.some((word) => id.includes(word));
}

/** A short id unique to this run, for schema, database and key-prefix names. */
export const RUN_ID = `${Date.now().toString(36)}${process.pid.toString(36)}`;
