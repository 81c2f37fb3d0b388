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
  /** Only systems whose id contains one of these (comma list), if given. */
  only: readonly string[];
  /** Only scenarios whose id contains one of these (comma list), if given. */
  scenarios: readonly string[];
  /** Write a CPU profile of the bench process and the workq server child, and time round trips. */
  profile: boolean;
  /** Count CPU time per job in each process group (bench, workq server, databases) over the timed part. */
  cpu: boolean;
  /**
   * Run the MongoDB smoke on the wire double (`mongodb-wire-smoke.ts`): alone with `--mongodb-smoke`, after
   * the comparative run with `--quick`.
   */
  mongodbSmoke: 'only' | 'after' | 'no';
}

export function resolveConfig(argv: readonly string[]): RunConfig {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      cpu: { type: 'boolean', default: false },
      'mongodb-smoke': { type: 'boolean', default: false },
      only: { type: 'string' },
      scenarios: { type: 'string' },
      jobs: { type: 'string' },
      repetitions: { type: 'string' },
    },
    strict: false,
  });
  const quick = values.quick === true;
  const text = (value: string | boolean | undefined) => (typeof value === 'string' ? value : undefined);
  const list = (value: string | boolean | undefined) => text(value)?.split(',') ?? [];
  const repetitions = text(values.repetitions);
  const jobs = text(values.jobs);
  return {
    quick,
    repetitions: repetitions ? Number(repetitions) : quick ? 1 : 3,
    jobs: jobs ? Number(jobs) : quick ? 2_000 : 10_000,
    latencyJobs: quick ? 100 : 500,
    latencyGapMs: 5,
    claimSizes: quick ? [1_000, 10_000] : [1_000, 100_000, 1_000_000],
    claimSamples: quick ? 50 : 300,
    historyJobs: quick ? 10_000 : 1_000_000,
    only: list(values.only),
    scenarios: list(values.scenarios),
    profile: values.profile === true,
    cpu: values.cpu === true,
    mongodbSmoke: values['mongodb-smoke'] === true ? 'only' : quick ? 'after' : 'no',
  };
}

/** A short id unique to this run, for schema, database and key-prefix names. */
export const RUN_ID = `${Date.now().toString(36)}${process.pid.toString(36)}`;
