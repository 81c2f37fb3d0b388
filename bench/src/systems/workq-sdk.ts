import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createClient } from '@workq/sdk';
import { RUN_ID, SERVICES } from '../config.ts';
import { benchJobs } from './bench-jobs.ts';
import { dropSchema, pgQuery, schemaName } from './pg-admin.ts';
import { timedFetch } from './round-trips.ts';
import type { BenchSystem, QueueUnderTest } from './types.ts';
import { seedWorkqJobs } from './workq-seed.ts';

const BENCH_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHILD = fileURLToPath(new URL('./workq-server-child.ts', import.meta.url));

export interface SdkSystemOptions {
  /** Directory for the server child's `--cpu-prof` output, or none. */
  cpuProfileDir?: string;
  timeRoundTrips: boolean;
}

/** Starts the queue server as a child process; resolves with its URL once it listens. */
async function startServerChild(storeUrl: string, cpuProfileDir: string | undefined) {
  const profileArgs = cpuProfileDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfileDir] : [];
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', ...profileArgs, CHILD, storeUrl], {
    cwd: BENCH_ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the workq server child did not start within 30 s')), 30_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`the workq server child exited with ${code}`)));
  });
  return {
    url,
    stop: async () => {
      child.stdin?.end();
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** The product path: SDK producer and consumer in this process, over tRPC/HTTP to a server child on PostgreSQL. */
async function openSdkQueue(tag: string, options: SdkSystemOptions): Promise<QueueUnderTest> {
  const schema = schemaName(`wq_sdk_${RUN_ID}`, tag);
  const server = await startServerChild(`${SERVICES.postgresUrl}?schema=${schema}`, options.cpuProfileDir);
  const sdk = createClient({
    url: server.url,
    jobs: benchJobs,
    ...(options.timeRoundTrips ? { fetch: timedFetch('workq-sdk-pg') } : {}),
  });
  return {
    enqueueOne: async (n) => {
      await sdk.enqueue.benchNoop({ n });
    },
    enqueueBulk: async (from, count) => {
      await sdk.enqueueMany.benchNoop(Array.from({ length: count }, (_, i) => ({ n: from + i })));
    },
    consume: async (concurrency, onJob) => {
      // Sized like graphile-worker's local queue in this bench: claimed ahead of free slots.
      const prefetch = Math.max(2 * concurrency, 10);
      const worker = sdk.consume('benchNoop', (job) => onJob(job.payload.n), { concurrency, prefetch });
      return { stop: () => worker.close() };
    },
    countCompleted: async () =>
      Number(
        (await pgQuery<{ c: string }>(`SELECT count(*) AS c FROM "${schema}".jobs WHERE state = 'completed'`))[0]?.c,
      ),
    seedReady: (count) => seedWorkqJobs(schema, 'benchNoop', count, 'waiting', 0),
    seedFinished: (count) => seedWorkqJobs(schema, 'benchNoop', count, 'completed', 0),
    close: async () => {
      await sdk.close();
      await server.stop();
      await dropSchema(schema);
    },
  };
}

export function workqSdkSystem(options: SdkSystemOptions): BenchSystem {
  return {
    id: 'workq-sdk-pg',
    label: 'workq SDK → server (tRPC/HTTP), PostgreSQL',
    supports: { latency: true, claim: false, history: true },
    notAvailable: { claim: 'claim is not a public SDK call; measured on workq core in-process' },
    open: (tag) => openSdkQueue(tag, options),
  };
}
