import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { freshPostgresSchema, until } from '@workq/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ChildProcesses, exited, RUN_TYPESCRIPT } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import type { FreshStore } from '../support/stores.ts';

const LEASE_MS = 1_500;
const WORKER_SCRIPT = join(import.meta.dirname, '..', 'support', 'worker-process.ts');

interface Run {
  id: string;
  atMs: number;
}

async function readRuns(file: string): Promise<Run[]> {
  const lines = (await readFile(file, 'utf8')).split('\n').filter((line) => line.trim() !== '');
  return lines.map((line) => {
    const [id, , , atMs] = line.split(' ');
    return { id: id as string, atMs: Number(atMs) };
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long the paused worker's handlers run. */
const HANDLER_MS = 300;
/** Time enough for a finished handler's ack, batched with others, to reach the server. */
const ACK_SLACK_MS = 1_000;

/**
 * A worker process stopped (SIGSTOP) past the leases of the jobs it held, then resumed (SIGCONT): meanwhile
 * another worker ran those jobs. The resumed worker must not start them again.
 */
describe('a worker process paused past its leases, then resumed', () => {
  const children = new ChildProcesses();
  let target: FreshStore | undefined;
  let server: QueueServer;
  let dir: string;
  const workers: Worker[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'workq-paused-'));
    target = freshPostgresSchema('workq_e2e');
    server = await startServer({ store: target.url, port: 0, logger: collectingLogger(), pollIntervalMs: 200 });
  });

  afterEach(async () => {
    await children.killAll();
    await Promise.all(workers.splice(0).map((worker) => worker.close()));
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Starts the worker process; resolves once it is claiming. */
  async function startPausable(log: string, env: Record<string, string>) {
    await writeFile(log, '');
    const child = children.spawnNode([...RUN_TYPESCRIPT, WORKER_SCRIPT], {
      WORKQ_URL: server.url,
      WORKQ_RUN_LOG: log,
      ...env,
    });
    await until(() => /^ready \d+$/m.test(child.output()), 30_000);
    return child;
  }

  /** Another worker, in this process, that runs whatever the paused one no longer holds. */
  function startRescuer(sdk: ReturnType<typeof createClient<typeof jobs>>, ran: Run[]) {
    workers.push(
      sdk.consume(
        'imageConvert',
        async (job) => {
          ran.push({ id: job.id, atMs: Date.now() });
          return { bytes: 1 };
        },
        { concurrency: 8, pollWaitMs: 500 },
      ),
    );
  }

  it('does not start the prefetched jobs whose leases ran out while it was stopped', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const log = join(dir, 'prefetching.log');
    const child = await startPausable(log, {
      WORKQ_CONCURRENCY: '2',
      WORKQ_PREFETCH: '6',
      WORKQ_HANDLER_MS: String(HANDLER_MS),
    });
    const payloads = Array.from({ length: 30 }, (_, i) => ({ source: `in/${i}.png`, output: `out/${i}.webp` }));
    const handles = await sdk.enqueueMany.imageConvert(payloads, { leaseMs: LEASE_MS, maxAttempts: 5 });

    // Stopped mid-run: two jobs running, six claimed ahead and waiting for a slot.
    await until(async () => (await readRuns(log)).length >= 3, 30_000);
    const stoppedAtMs = Date.now();
    children.signal(child, 'SIGSTOP', { group: true });

    // Its leases run out (they ran from its claims, before the stop); another worker runs every job, those it held included.
    const rescued: Run[] = [];
    startRescuer(sdk, rescued);
    await Promise.all(handles.map((handle) => handle.result({ timeoutMs: 30_000 })));

    children.signal(child, 'SIGCONT', { group: true });
    const resumedAtMs = Date.now();
    // Long enough for its stalled handlers to finish and its slots to take the prefetched jobs.
    await sleep(1_500);
    children.signal(child, 'SIGTERM');
    expect(await exited(child)).toMatchObject({ code: 0 });

    const runs = await readRuns(log);
    const runAfterResume = runs.filter((run) => run.atMs >= resumedAtMs).map((run) => run.id);
    expect(runAfterResume, 'jobs the resumed worker started, all of them run already by another worker').toEqual([]);
    expect(child.output()).toMatch(/Handed back \d+ "imageConvert" job\(s\) unstarted/);
    // Each job ran once, except those whose handler was running when the worker was stopped, or had just
    // finished with its ack still batched: none that started well before the stop runs again.
    const startedAtMs = new Map(runs.map((run) => [run.id, run.atMs]));
    const twice = rescued.filter((run) => startedAtMs.has(run.id));
    const settledBeforeStopMs = stoppedAtMs - HANDLER_MS - ACK_SLACK_MS;
    expect(twice.filter((run) => (startedAtMs.get(run.id) as number) < settledBeforeStopMs)).toEqual([]);
  }, 60_000);

  it('does not start a job handed to its waiting claim while it was stopped, once that job’s lease ran out', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const log = join(dir, 'waiting.log');
    const startedAtMs = Date.now();
    const child = await startPausable(log, { WORKQ_CONCURRENCY: '1', WORKQ_POLL_WAIT_MS: '20000' });
    // Its claim is waiting on the server for work.
    const claiming = async () =>
      (await sdk.admin.stats()).consumers.some((consumer) => consumer.seenAt.getTime() >= startedAtMs);
    await until(claiming, 10_000);
    await sleep(200);
    children.signal(child, 'SIGSTOP', { group: true });

    // The job is handed to that claim; the answer waits, unread, in the stopped process's socket.
    const handle = await sdk.enqueue.imageConvert({ source: 'in/w.png', output: 'out/w.webp' }, { leaseMs: LEASE_MS });
    await until(async () => (await handle.status()).state === 'active', 5_000);
    await sleep(LEASE_MS + 200);

    const rescued: Run[] = [];
    startRescuer(sdk, rescued);
    await handle.result({ timeoutMs: 30_000 });
    expect(rescued.map((run) => run.id)).toEqual([handle.id]);

    children.signal(child, 'SIGCONT', { group: true });
    await sleep(1_000);
    children.signal(child, 'SIGTERM');
    expect(await exited(child)).toMatchObject({ code: 0 });
    expect(await readRuns(log), 'runs of the resumed worker').toEqual([]);
    expect(child.output()).toMatch(/Handed back 1 "imageConvert" job\(s\) unstarted/);
  }, 60_000);
});
