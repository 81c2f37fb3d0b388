import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type Store } from '@workq/core/engine';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ChildProcesses, exited, RUN_TYPESCRIPT } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { describeEachStore, type FreshStore, listStoredJobs, SHARED_STORES, serverStore } from '../support/stores.ts';

const JOB_COUNT = 2_000;
const WORKER_COUNT = 3;
const LEASE_MS = 2_000;
/** Jobs the victim handles before its handlers stop finishing. */
const HANG_AFTER = 150;
const WORKER_SCRIPT = join(import.meta.dirname, '..', 'support', 'worker-process.ts');

interface Run {
  id: string;
  attempt: number;
  pid: number;
  atMs: number;
}

async function readRuns(files: readonly string[]): Promise<Run[]> {
  const runs: Run[] = [];
  for (const file of files) {
    for (const line of (await readFile(file, 'utf8')).split('\n')) {
      if (line.trim() === '') continue;
      const [id, attempt, pid, atMs] = line.split(' ');
      runs.push({ id: id as string, attempt: Number(attempt), pid: Number(pid), atMs: Number(atMs) });
    }
  }
  return runs.sort((a, b) => a.atMs - b.atMs);
}

/** The worker's own pid, from its `ready <pid>` line. */
async function readyPid(output: () => string): Promise<number> {
  await until(() => /^ready \d+$/m.test(output()), 30_000);
  return Number(/^ready (\d+)$/m.exec(output())?.[1]);
}

await describeEachStore(SHARED_STORES, 'a worker process killed mid-run over $label', ({ label, open }) => {
  const children = new ChildProcesses();
  let target: FreshStore | undefined;
  let server: QueueServer;
  /** The store read directly, not through the server under test. */
  let store: Store | undefined;
  let dir: string;

  const storedJobs = () => listStoredJobs(store!, 'imageConvert');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'workq-crash-'));
    target = await open();
    server = await startServer({
      store: await serverStore(target),
      port: 0,
      logger: collectingLogger(),
      pollIntervalMs: 500,
    });
    const direct = await serverStore(target);
    store = typeof direct === 'string' ? await openStore(direct) : direct;
  });

  afterAll(async () => {
    await children.killAll();
    await server?.close();
    await store?.close();
    await target?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('completes every job exactly once, redelivering only the killed worker’s jobs after their lease', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const payloads = Array.from({ length: JOB_COUNT }, (_, i) => ({ source: `in/${i}.png`, output: `out/${i}.webp` }));
    for (let i = 0; i < JOB_COUNT; i += 500) {
      await sdk.enqueueMany.imageConvert(payloads.slice(i, i + 500), { leaseMs: LEASE_MS, maxAttempts: 5 });
    }
    expect((await storedJobs()).length).toBe(JOB_COUNT);

    const logs = Array.from({ length: WORKER_COUNT }, (_, i) => join(dir, `worker-${i}.log`));
    const workers = [];
    for (const [index, log] of logs.entries()) {
      await writeFile(log, '');
      workers.push(
        children.spawnNode([...RUN_TYPESCRIPT, WORKER_SCRIPT], {
          WORKQ_URL: server.url,
          WORKQ_RUN_LOG: log,
          WORKQ_CONCURRENCY: '4',
          WORKQ_HANDLER_MS: '8',
          ...(index === 0 ? { WORKQ_HANG_AFTER: String(HANG_AFTER) } : {}),
        }),
      );
    }
    const victim = workers[0]!;
    const pids = await Promise.all(workers.map((worker) => readyPid(worker.output)));
    const victimPid = pids[0]!;

    // Kill once the victim has handled HANG_AFTER jobs and is stuck mid-handler in all 4 slots, holding their leases.
    const victimLines = async () => (await readFile(logs[0]!, 'utf8')).trim().split('\n');
    await until(async () => (await victimLines()).length >= HANG_AFTER + 4, 60_000);
    const heldAtKill = (await victimLines()).slice(HANG_AFTER).map((line) => line.split(' ')[0] as string);
    const held = await Promise.all(heldAtKill.map((id) => store!.getJob(id)));
    expect(held.filter((job) => job?.state === 'active').length, 'jobs the victim holds mid-handler').toBe(4);
    children.signal(victim, 'SIGKILL', { group: true });
    const killedAtMs = Date.now();
    expect(await exited(victim)).toMatchObject({ signal: 'SIGKILL' });

    // Counted rather than listed while waiting: the store's count is one cheap query, the listing 2,000 full rows.
    const unfinished = async () =>
      (await store!.countJobs(new Date()))
        .filter((count) => count.name === 'imageConvert' && count.state !== 'completed')
        .reduce((sum, count) => sum + count.count, 0);
    await until(async () => (await unfinished()) === 0, 90_000, 250);
    const survivors = workers.slice(1);
    for (const worker of survivors) children.signal(worker, 'SIGTERM');
    for (const worker of survivors) expect(await exited(worker)).toMatchObject({ code: 0 });

    const stored = await storedJobs();
    expect(stored.length).toBe(JOB_COUNT);
    expect(stored.filter((job) => job.state !== 'completed')).toEqual([]);

    const runs = await readRuns(logs);
    const runsById = new Map<string, Run[]>();
    for (const run of runs) runsById.set(run.id, [...(runsById.get(run.id) ?? []), run]);
    expect(runsById.size).toBe(JOB_COUNT);
    const redelivered: Run[][] = [];
    for (const job of stored) {
      const jobRuns = runsById.get(job.id) ?? [];
      const last = jobRuns.at(-1) as Run;
      // Each run is a later attempt; the last one is the attempt the store completed.
      expect(jobRuns.map((r) => r.attempt).every((a, i, all) => i === 0 || a > (all[i - 1] as number))).toBe(true);
      expect(last.attempt, `attempts of ${job.id}`).toBe(job.attempts);
      if (job.attempts === 1) continue;
      redelivered.push(jobRuns);
      // A delivery counts as an attempt even when the killed process died before its handler started,
      // so at most one attempt per job may be missing from the log.
      expect(job.attempts - jobRuns.length, `unlogged attempts of ${job.id}`).toBeLessThanOrEqual(1);
      for (const early of jobRuns.slice(0, -1)) {
        expect(early.pid, `${job.id} ran before its redelivery only in the killed worker`).toBe(victimPid);
        expect(early.atMs).toBeLessThanOrEqual(killedAtMs);
      }
      expect(last.pid).not.toBe(victimPid);
      // Its lease was last extended at most a third of LEASE_MS before the kill, so it expired at least 2/3 after.
      expect(last.atMs - killedAtMs, `${job.id} redelivered only after its lease`).toBeGreaterThanOrEqual(LEASE_MS / 2);
    }
    // Exactly the jobs the killed worker held mid-handler ran again (its 4 slots were full, so it held no others).
    expect(redelivered.map((jobRuns) => (jobRuns[0] as Run).id).sort()).toEqual([...heldAtKill].sort());
    for (const id of heldAtKill) expect(runsById.get(id)?.length, `${id} ran twice`).toBe(2);
    const victimRuns = runs.filter((run) => run.pid === victimPid).length;
    const perWorker = pids.slice(1).map((pid) => runs.filter((run) => run.pid === pid).length);
    console.info(
      `crash over ${label}: ${JOB_COUNT} jobs, killed worker ran ${victimRuns}, survivors ${perWorker.join('/')}, ` +
        `${redelivered.length} redelivered, done ${((Date.now() - killedAtMs) / 1000).toFixed(1)} s after the kill`,
    );
  }, 120_000);
});
