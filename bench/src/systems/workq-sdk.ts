import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createClient, type WorkqClient } from '@workq/sdk';
import { RUN_ID, SERVICES } from '../config.ts';
import { benchJobs } from './bench-jobs.ts';
import { createDatabase, dropDatabase, mariadbQuery } from './mariadb-admin.ts';
import { dropSchema, pgQuery, schemaName } from './pg-admin.ts';
import { timedFetch } from './round-trips.ts';
import type { BenchSystem, FlowsUnderTest, QueueUnderTest } from './types.ts';
import { seedWorkqJobs } from './workq-seed.ts';

const BENCH_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./workq-server-child.ts', import.meta.url));

export interface SdkSystemOptions {
  /** Directory for the server child's `--cpu-prof` output, or none. */
  cpuProfileDir?: string;
  timeRoundTrips: boolean;
}

/**
 * The child process that hosts the workq servers (`workq-server-child.ts`),
 * started on first use and kept for the run; commands go one at a time.
 */
class ServerHost {
  private child: ChildProcess | undefined;
  private answers: AsyncIterator<string> | undefined;
  private exited: Promise<void> = Promise.resolve();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly cpuProfileDir: string | undefined) {}

  /** Starts a server on `storeUrl` in the child; resolves with its URL once it listens. */
  start(storeUrl: string): Promise<string> {
    return this.command({ start: storeUrl }).then((answer) => answer.url as string);
  }

  async stop(): Promise<void> {
    await this.command({ stop: true });
  }

  /** Ends the child (its CPU profile, with `--profile`, is written as it exits). */
  async dispose(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    child.stdin?.end();
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(killer);
  }

  private command(message: object): Promise<Record<string, unknown>> {
    const next = this.queue.then(() => this.send(message));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async send(message: object): Promise<Record<string, unknown>> {
    const { child, answers } = this.spawned();
    child.stdin?.write(`${JSON.stringify(message)}\n`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the workq server child did not answer within 30 s')), 30_000);
    });
    const died = this.exited.then(() => Promise.reject(new Error('the workq server child exited')));
    try {
      const line = await Promise.race([answers.next(), timeout, died]);
      if (line.done) throw new Error('the workq server child closed its output');
      const answer = JSON.parse(line.value) as Record<string, unknown>;
      if (typeof answer.error === 'string') throw new Error(`workq server child: ${answer.error}`);
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }

  private spawned(): { child: ChildProcess; answers: AsyncIterator<string> } {
    if (this.child && this.answers && this.child.exitCode === null) return { child: this.child, answers: this.answers };
    const profileArgs = this.cpuProfileDir ? ['--cpu-prof', '--cpu-prof-dir', this.cpuProfileDir] : [];
    const child = spawn(process.execPath, ['--import', 'tsx', ...profileArgs, CHILD], {
      cwd: BENCH_ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.child = child;
    this.exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    this.answers = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
    return { child, answers: this.answers };
  }
}

type Backend = 'pg' | 'mariadb';

/** A fresh store for one scenario: its URL, how to count its completed jobs, and how to drop it. */
interface SdkStore {
  url: string;
  /** The PostgreSQL schema, where the store is on PostgreSQL (for seeding). */
  schema?: string;
  countCompleted(): Promise<number>;
  drop(): Promise<void>;
}

async function prepareStore(backend: Backend, tag: string): Promise<SdkStore> {
  const name = schemaName(`wq_sdk_${RUN_ID}`, tag);
  if (backend === 'mariadb') {
    return {
      url: await createDatabase(name),
      countCompleted: async () =>
        Number(
          (await mariadbQuery(`SELECT COUNT(*) AS c FROM \`${name}\`.workq_jobs WHERE state = 'completed'`))[0]?.c,
        ),
      drop: () => dropDatabase(name),
    };
  }
  return {
    url: `${SERVICES.postgresUrl}?schema=${name}`,
    schema: name,
    countCompleted: async () =>
      Number(
        (await pgQuery<{ c: string }>(`SELECT count(*) AS c FROM "${name}".jobs WHERE state = 'completed'`))[0]?.c,
      ),
    drop: () => dropSchema(name),
  };
}

/** The product path: SDK producer and consumer in this process, over tRPC/HTTP to a server child on `backend`. */
async function openSdkQueue(
  backend: Backend,
  tag: string,
  options: SdkSystemOptions,
  host: ServerHost,
): Promise<QueueUnderTest> {
  const store = await prepareStore(backend, tag);
  const url = await host.start(store.url);
  const sdk = createClient({
    url,
    jobs: benchJobs,
    ...(options.timeRoundTrips ? { fetch: timedFetch(`workq-sdk-${backend}`) } : {}),
  });
  // One-time set-up before anything is timed, as pg-boss's queue is created and graphile-worker migrated at open.
  await sdk.ready();
  return {
    enqueueOne: async (n) => {
      await sdk.enqueue.benchNoop({ n });
    },
    enqueueBulk: async (from, count) => {
      await sdk.enqueueMany.benchNoop(Array.from({ length: count }, (_, i) => ({ n: from + i })));
    },
    claimsAhead: true,
    consume: async (concurrency, onJob, holdAtMost) => {
      // Sized like graphile-worker's local queue in this bench: claimed ahead of free slots.
      const prefetch = holdAtMost === undefined ? Math.max(2 * concurrency, 10) : Math.max(0, holdAtMost - concurrency);
      const worker = sdk.consume('benchNoop', (job) => onJob(job.payload.n), { concurrency, prefetch });
      return { stop: () => worker.close() };
    },
    countCompleted: () => store.countCompleted(),
    watchEvents: async () => {
      const controller = new AbortController();
      let received = 0;
      const watching = (async () => {
        for await (const _event of sdk.events('benchNoop', { signal: controller.signal })) received += 1;
      })();
      return {
        received: () => received,
        stop: async () => {
          controller.abort();
          await watching;
        },
      };
    },
    setLimits: async (limits) => {
      await sdk.admin.setLimits('benchNoop', limits);
    },
    enqueueGroupedBulk: async (from, count, group) => {
      await sdk.enqueueMany.benchNoop(
        Array.from({ length: count }, (_, i) => ({ n: from + i })),
        { group },
      );
    },
    ...(store.schema === undefined ? {} : seeding(store.schema)),
    ...(backend === 'pg' ? { flows: sdkFlows(sdk, store) } : {}),
    close: async () => {
      await sdk.close();
      await host.stop();
      await store.drop();
    },
  };
}

/** Flows through the SDK: a parent with its children in one enqueue, the parent reading `ctx.childResults`. */
function sdkFlows(sdk: WorkqClient<typeof benchJobs>, store: SdkStore): FlowsUnderTest {
  return {
    enqueueFlow: async (p, children) => {
      await sdk.enqueue.benchParent(
        { p },
        { children: Array.from({ length: children }, (_, c) => sdk.child.benchChild({ p, c })) },
      );
    },
    consume: async (concurrency, listener) => {
      const children = sdk.consume(
        'benchChild',
        (job) => {
          listener.onChild(job.payload);
          return job.payload;
        },
        { concurrency: concurrency.children, prefetch: 2 * concurrency.children },
      );
      const parents = sdk.consume(
        'benchParent',
        (job, ctx) => listener.onParent(job.payload.p, () => ctx.childResults('benchChild')),
        { concurrency: concurrency.parents },
      );
      return { stop: () => Promise.all([children.close(), parents.close()]).then(() => undefined) };
    },
    countCompleted: () => store.countCompleted(),
  };
}

/** Ready jobs and history written straight into a PostgreSQL store's own tables (`workq-seed.ts`). */
function seeding(schema: string): Pick<QueueUnderTest, 'seedReady' | 'seedFinished'> {
  return {
    seedReady: (count) => seedWorkqJobs(schema, 'benchNoop', count, 'waiting', 0),
    seedFinished: (count) => seedWorkqJobs(schema, 'benchNoop', count, 'completed', 0),
  };
}

const NO_PUBLIC_CLAIM = 'claim is not a public SDK call; measured on workq core in-process';

const MARIADB_PLAIN = 'the SDK on MariaDB runs the enqueue, drain, latency and steady-load scenarios only';

export function workqSdkSystem(backend: Backend, options: SdkSystemOptions): BenchSystem {
  const host = new ServerHost(options.cpuProfileDir);
  const pg = backend === 'pg';
  return {
    id: `workq-sdk-${backend}`,
    label: `workq SDK → server (tRPC/HTTP), ${pg ? 'PostgreSQL' : 'MariaDB'}`,
    supports: { latency: true, claim: false, history: pg, events: pg, flow: pg, flows: pg },
    notAvailable: {
      claim: NO_PUBLIC_CLAIM,
      limitedClaim: NO_PUBLIC_CLAIM,
      ...(pg ? {} : { history: MARIADB_PLAIN, events: MARIADB_PLAIN, flow: MARIADB_PLAIN }),
    },
    open: (tag) => openSdkQueue(backend, tag, options, host),
    dispose: () => host.dispose(),
  };
}
