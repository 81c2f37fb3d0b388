/**
 * One chaos run on one kind of store: a private database, two queue servers
 * and a fleet of worker processes, all killed and restarted on a schedule
 * while producers enqueue; then, once everything has drained, the checks of
 * analysis.ts. Everything it starts it ends, and its temporary directory is
 * removed.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JobRecord, openStore, type Store } from '@workq/core/engine';
import { createClient } from '@workq/sdk';
import { freePort, until } from '@workq/test-support';
import { analyse, type BacklogSample, type Checks, type FaultEvent } from './analysis.ts';
import { CHAOS_LEASE_MS, chaosJobs } from './catalog.ts';
import { failoverFetch } from './failover-fetch.ts';
import { NodeProcesses } from './node-processes.ts';
import { type DatabaseKind, type PrivateDatabase, startPrivateDatabase } from './private-database.ts';
import { type ProducerFigures, runProducers } from './producers.ts';
import type { ChaosProfile } from './profiles.ts';
import { counterValue, QueueServerProcess } from './queue-server-process.ts';
import { readRecords } from './run-log.ts';
import { WorkerFleet } from './worker-fleet.ts';

const TOKEN = `chaos-${randomUUID()}`;
const JOB_NAME = 'chaosJob';

/** The private database could not be started here: the run is skipped, with this reason. */
export class ChaosUnavailable extends Error {}

export interface ChaosReport {
  store: DatabaseKind;
  profile: ChaosProfile;
  checks: Checks;
  producers: Omit<ProducerFigures, 'acknowledged'>;
  /** Unkeyed enqueues acknowledged after a retry whose first outcome was unknown (a second job possible). */
  uncertainUnkeyed: number;
  /** Keyed retries answered with the job an earlier, unanswered try had made. */
  keyedRetriesFoundExisting: number;
  faults: Record<FaultEvent['kind'], number>;
  /** Every fault injected, in order. */
  faultEvents: FaultEvent[];
  /** Jobs a queue server handed straight to a waiting consumer (from its metrics; a lower bound). */
  handoffs: number;
  maxBacklog: number;
  unexpectedExits: string[];
  serverFailedStarts: number;
  tornLogLines: number;
  timings: {
    databaseFirstStartMs: number;
    databaseRestartMs: number[];
    serverRestartMs: number[];
    setupMs: number;
    chaosMs: number;
    drainMs: number;
    totalMs: number;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** How to end each run in progress, should its caller give up on it. */
const inProgress = new Set<() => Promise<void>>();

/**
 * Ends every run in progress: its processes killed, its database stopped. For a test that timed out, or an
 * interrupted command, whose run would otherwise leave them behind (each runs in a process group of its own).
 */
export async function stopChaosRuns(): Promise<void> {
  await Promise.all([...inProgress].map((abandon) => abandon()));
}

export async function runChaos(
  kind: DatabaseKind,
  profile: ChaosProfile,
  options: { log?: (line: string) => void; keepDir?: boolean } = {},
): Promise<ChaosReport> {
  const log = options.log ?? (() => undefined);
  const startedAt = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'workq-chaos-'));
  const processes = new NodeProcesses();
  const faults: FaultEvent[] = [];
  const unexpectedExits: string[] = [];
  let database: PrivateDatabase | undefined;
  let store: Store | undefined;
  const abandon = async () => {
    await processes.killAll();
    await database?.destroy();
    if (!options.keepDir) await rm(dir, { recursive: true, force: true });
  };
  inProgress.add(abandon);
  try {
    try {
      database = await startPrivateDatabase(kind);
    } catch (error) {
      throw new ChaosUnavailable(`a private ${kind} server could not be started: ${(error as Error).message}`);
    }
    const db = database;
    log(`${kind}: private database up in ${db.firstStartMs} ms at ${db.url}`);

    const [portA, portB] = [await freePort(), await freePort()];
    const servers = (['A', 'B'] as const).map(
      (name, i) =>
        new QueueServerProcess({
          name,
          store: db.url,
          port: (i === 0 ? portA : portB) as number,
          token: TOKEN,
          logFile: join(dir, `server-${name}.log`),
          processes,
          onUnexpectedExit: (server, how) => unexpectedExits.push(`server ${server} exited (${how})`),
        }),
    );
    await Promise.all(servers.map((server) => server.start()));
    const urls = servers.map((server) => server.url);
    const fleet = new WorkerFleet({
      slots: profile.workers,
      concurrency: profile.concurrency,
      urls,
      token: TOKEN,
      dir,
      processes,
      onUnexpectedExit: (pid, how) => unexpectedExits.push(`worker ${pid} exited (${how})`),
    });
    fleet.startAll();
    await fleet.whenReady(60_000);
    const setupMs = Date.now() - startedAt;
    log(`${kind}: servers and ${profile.workers} workers up after ${setupMs} ms; faults for ${profile.chaosMs} ms`);

    const chaosStartedAt = Date.now();
    const chaosEndsAt = chaosStartedAt + profile.chaosMs;
    const stopProducers = new AbortController();
    const [minWorkMs, maxWorkMs] = profile.workMs;
    const producing = runProducers(
      {
        urls,
        token: TOKEN,
        singles: profile.singles,
        loops: profile.producerLoops,
        ratePerSec: (profile.singles * 1000) / profile.produceOverMs,
        keyedShare: profile.keyedShare,
        workMs: () => minWorkMs + Math.floor(Math.random() * (maxWorkMs - minWorkMs + 1)),
        runId: randomUUID(),
        giveUpAt: chaosEndsAt + 60_000,
        ...(profile.backlog ? { backlog: profile.backlog } : {}),
      },
      stopProducers.signal,
    );
    let producersDone = false;
    const sampler = new Sampler(servers, urls);
    const sampling = sampler.run(() => Date.now() > chaosEndsAt + 5_000 && producersDone);
    const databaseRestartMs: number[] = [];
    const serverRestartMs: number[] = [];
    const killServer = async (server: QueueServerProcess): Promise<void> => {
      await sampler.beforeKill(server);
      const at = Date.now();
      await server.kill();
      await sleep(profile.serverDownMs);
      serverRestartMs.push(await server.start());
      faults.push({ kind: 'server-kill', at, until: Date.now(), target: server.name });
      log(`${kind}: server ${server.name} killed at +${at - chaosStartedAt} ms, back after ${Date.now() - at} ms`);
    };
    const databaseFault = async (fault: ChaosProfile['databaseFaults'][number]): Promise<void> => {
      const at = Date.now();
      if (fault.kind === 'crash') await db.crash();
      else await db.shutdown();
      await sleep(fault.downMs);
      databaseRestartMs.push(await db.start());
      const eventKind = fault.kind === 'crash' ? 'database-crash' : 'database-restart';
      faults.push({ kind: eventKind, at, until: Date.now(), target: kind });
      log(`${kind}: database ${fault.kind} at +${at - chaosStartedAt} ms, back after ${Date.now() - at} ms`);
    };
    await Promise.all([
      workerFaults(fleet, profile, chaosStartedAt, chaosEndsAt, faults),
      (async () => {
        const actions = [
          ...profile.serverKillsAtMs.map((atMs, i) => ({ atMs, run: () => killServer(servers[i % 2]!) })),
          ...profile.databaseFaults.map((fault) => ({ atMs: fault.atMs, run: () => databaseFault(fault) })),
        ].sort((a, b) => a.atMs - b.atMs);
        for (const action of actions) {
          await sleep(chaosStartedAt + action.atMs - Date.now());
          if (Date.now() > chaosEndsAt) break;
          await action.run();
        }
      })(),
    ]);

    const producers = await producing;
    producersDone = true;
    log(
      `${kind}: faults over; ${producers.acknowledged.length} enqueues acknowledged, ` +
        `${producers.keyedRetries + producers.unkeyedRetries} retried`,
    );
    const drainStartedAt = Date.now();
    store = await openStore(db.url);
    const openStoreHandle = store;
    const expected = new Set(producers.acknowledged.map((ack) => ack.id)).size;
    const unfinished = async () => {
      const counts = (await openStoreHandle.countJobs(new Date())).filter((count) => count.name === JOB_NAME);
      const total = counts.reduce((sum, count) => sum + count.count, 0);
      const completed = counts.filter((c) => c.state === 'completed').reduce((sum, c) => sum + c.count, 0);
      return total < expected ? expected - completed : total - completed;
    };
    await until(async () => (await unfinished()) === 0, profile.drainTimeoutMs, 500).catch(async () => {
      log(`${kind}: ${await unfinished()} jobs still unfinished after ${profile.drainTimeoutMs} ms of draining`);
    });
    const drainMs = Date.now() - drainStartedAt;
    await sampling;
    await fleet.closeAll();
    await sampler.final();
    await Promise.all(servers.map((server) => server.stop()));

    const stored = await listJobs(openStoreHandle);
    const { records, tornLines } = readRecords(fleet.logFiles);
    const checks = analyse({
      stored,
      producers,
      records,
      faults,
      backlog: sampler.backlog,
      backlogThreshold: profile.backlogThreshold,
      leaseMs: CHAOS_LEASE_MS,
    });
    const { acknowledged, ...producerCounts } = producers;
    const faultCounts = {
      'worker-kill': 0,
      'worker-stop': 0,
      'server-kill': 0,
      'database-crash': 0,
      'database-restart': 0,
    };
    for (const fault of faults) faultCounts[fault.kind]++;
    return {
      store: kind,
      profile,
      checks,
      producers: producerCounts,
      uncertainUnkeyed: acknowledged.filter((ack) => !ack.keyed && ack.uncertain).length,
      keyedRetriesFoundExisting: acknowledged.filter((ack) => ack.keyed && !ack.created).length,
      faults: faultCounts,
      faultEvents: faults.sort((a, b) => a.at - b.at),
      handoffs: sampler.handoffs,
      maxBacklog: Math.max(0, ...sampler.backlog.map((sample) => sample.ready)),
      unexpectedExits,
      serverFailedStarts: servers.reduce((sum, server) => sum + server.failedStarts, 0),
      tornLogLines: tornLines,
      timings: {
        databaseFirstStartMs: db.firstStartMs,
        databaseRestartMs,
        serverRestartMs,
        setupMs,
        chaosMs: drainStartedAt - chaosStartedAt,
        drainMs,
        totalMs: Date.now() - startedAt,
      },
    };
  } finally {
    inProgress.delete(abandon);
    await processes.killAll();
    await store?.close().catch(() => undefined);
    await database?.destroy();
    if (!options.keepDir) await rm(dir, { recursive: true, force: true });
    else log(`${kind}: logs kept in ${dir}`);
  }
}

async function listJobs(store: Store): Promise<JobRecord[]> {
  const all: JobRecord[] = [];
  for (;;) {
    const afterId = all.at(-1)?.id;
    const page = await store.listJobs({ name: JOB_NAME, limit: 1000, ...(afterId === undefined ? {} : { afterId }) });
    all.push(...page);
    if (page.length < 1000) return all;
  }
}

/** Worker faults: a SIGKILL every `workerKillEveryMs`, and a SIGSTOP past the lease every `workerStopEveryMs`. */
async function workerFaults(
  fleet: WorkerFleet,
  profile: ChaosProfile,
  startedAt: number,
  endsAt: number,
  faults: FaultEvent[],
): Promise<void> {
  let nextKillAt = startedAt + profile.firstWorkerKillAtMs;
  let nextStopAt = startedAt + profile.firstWorkerStopAtMs;
  let turn = 0;
  const resumes: Promise<void>[] = [];
  while (Math.min(nextKillAt, nextStopAt) < endsAt) {
    await sleep(Math.min(nextKillAt, nextStopAt) - Date.now());
    const runnable = fleet.runnable;
    const slot = runnable[turn++ % Math.max(1, runnable.length)];
    if (nextKillAt <= nextStopAt) {
      nextKillAt += profile.workerKillEveryMs;
      if (slot === undefined) continue;
      const at = Date.now();
      const pid = await fleet.kill(slot);
      faults.push({ kind: 'worker-kill', at, until: at, target: String(pid) });
    } else {
      nextStopAt += profile.workerStopEveryMs;
      // Keep one worker running: stop only when another is runnable.
      if (slot === undefined || runnable.length < 2) continue;
      const at = Date.now();
      const pid = fleet.pause(slot);
      resumes.push(
        sleep(profile.workerStopMs).then(() => {
          fleet.resume(slot);
          faults.push({ kind: 'worker-stop', at, until: Date.now(), target: String(pid) });
        }),
      );
    }
  }
  await Promise.all(resumes);
}

/** Samples the ready backlog every second and the servers' handoff counters every two. */
class Sampler {
  readonly backlog: BacklogSample[] = [];
  /** Handoffs counted by server processes that have since been killed or stopped. */
  private counted = 0;
  private readonly lastSeen = new Map<QueueServerProcess, number>();
  private readonly admin;

  constructor(
    private readonly servers: readonly QueueServerProcess[],
    urls: readonly string[],
  ) {
    const transport = failoverFetch({ urls, timeoutMs: () => 5_000 });
    this.admin = createClient({ url: urls[0] as string, jobs: chaosJobs, token: TOKEN, fetch: transport.fetch }).admin;
  }

  get handoffs(): number {
    return this.counted + [...this.lastSeen.values()].reduce((sum, value) => sum + value, 0);
  }

  async run(done: () => boolean): Promise<void> {
    for (let tick = 0; !done() && tick < 3_600; tick++) {
      const at = Date.now();
      const stats = await this.admin.stats().catch(() => undefined);
      if (stats) {
        const ready = stats.counts.filter((c) => c.name === JOB_NAME && c.state === 'ready');
        this.backlog.push({ at, ready: ready.reduce((sum, c) => sum + c.count, 0) });
      }
      if (tick % 2 === 0) await Promise.all(this.servers.map((server) => this.scrape(server)));
      await sleep(at + 1_000 - Date.now());
    }
  }

  /** Reads a server's counter once more before it is killed, and banks it: its next process counts from 0. */
  async beforeKill(server: QueueServerProcess): Promise<void> {
    await this.scrape(server);
    this.counted += this.lastSeen.get(server) ?? 0;
    this.lastSeen.delete(server);
  }

  async final(): Promise<void> {
    await Promise.all(this.servers.map((server) => this.scrape(server)));
  }

  private async scrape(server: QueueServerProcess): Promise<void> {
    const metrics = await server.metrics();
    if (metrics !== undefined) this.lastSeen.set(server, counterValue(metrics, 'workq_jobs_handed_over_total'));
  }
}
