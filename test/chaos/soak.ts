/**
 * `pnpm soak`: a steady load for a long time (30 minutes by default) through
 * the SDK and two queue servers on a private database, sampling the resident
 * memory of the server and worker processes. It fails when the peak of any of
 * them grew by 10% or more between the window just after warm-up and the last,
 * or when an acknowledged job did not complete. Not part of CI; see docs/soak.md.
 *
 *   pnpm soak [--minutes 30] [--rate 50] [--store postgres|mysql] [--warmup-minutes <n>] [--out <file>]
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { createClient } from '@workq/sdk';
import { freePort } from '@workq/test-support';
import { REPO_ROOT } from '../support/processes.ts';
import { percentile } from './analysis.ts';
import { chaosJobs } from './catalog.ts';
import { failoverFetch } from './failover-fetch.ts';
import { NodeProcesses, residentBytes } from './node-processes.ts';
import { type DatabaseKind, type PrivateDatabase, startPrivateDatabase } from './private-database.ts';
import { runProducers } from './producers.ts';
import { QueueServerProcess } from './queue-server-process.ts';
import { WorkerFleet } from './worker-fleet.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string', default: '50' },
    store: { type: 'string', default: 'postgres' },
    'warmup-minutes': { type: 'string' },
    out: { type: 'string' },
  },
});
const durationMs = Number(values.minutes) * 60_000;
const ratePerSec = Number(values.rate);
const kind = values.store as DatabaseKind;
if (kind !== 'postgres' && kind !== 'mysql') throw new Error(`unknown store "${kind}": postgres or mysql`);
if (!(durationMs > 0 && ratePerSec > 0)) throw new Error('--minutes and --rate must be positive numbers');
/** Memory before this is start-up and warm-up (JIT, pools, caches filling), not growth. */
const warmupMs =
  values['warmup-minutes'] === undefined ? Math.max(60_000, durationMs / 6) : Number(values['warmup-minutes']) * 60_000;
/**
 * The windows whose peak resident memory is compared: the one right after warm-up, and the last. Resident
 * memory of a Node process is a sawtooth (the heap grows until a major collection gives pages back, about
 * once a minute here), so each window spans at least a minute: its peak is the high-water mark of whole
 * cycles, where a single sample or a median would depend on where in a cycle it fell.
 */
const windowMs = Math.max(60_000, durationMs / 6);
const SAMPLE_EVERY_MS = 5_000;
const GROWTH_LIMIT = 0.1;
const WORKERS = 2;
const TOKEN = `soak-${randomUUID()}`;
const startedAtIso = new Date().toISOString();
const out =
  values.out ?? join(REPO_ROOT, 'test', '.tmp-soak', `soak-${kind}-${startedAtIso.replace(/[:.]/g, '-')}.json`);
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

interface Sample {
  /** Milliseconds since the load started. */
  atMs: number;
  process: string;
  pid: number;
  rssBytes: number;
}

const interrupted = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => interrupted.abort());

const dir = await mkdtemp(join(tmpdir(), 'workq-soak-'));
const processes = new NodeProcesses();
const unexpectedExits: string[] = [];
let database: PrivateDatabase | undefined;
let failed = false;
try {
  database = await startPrivateDatabase(kind);
  log(`private ${kind} up in ${database.firstStartMs} ms`);
  const db = database;
  const servers = await Promise.all(
    ['A', 'B'].map(async (name) => {
      const server = new QueueServerProcess({
        name,
        store: db.url,
        port: await freePort(),
        token: TOKEN,
        logFile: join(dir, `server-${name}.log`),
        processes,
        onUnexpectedExit: (server, how) => unexpectedExits.push(`server ${server} exited (${how})`),
      });
      await server.start();
      return server;
    }),
  );
  const urls = servers.map((server) => server.url);
  const fleet = new WorkerFleet({
    slots: WORKERS,
    concurrency: 4,
    urls,
    token: TOKEN,
    dir,
    processes,
    runLogs: false,
    onUnexpectedExit: (pid, how) => unexpectedExits.push(`worker ${pid} exited (${how})`),
  });
  fleet.startAll();
  await fleet.whenReady(60_000);
  log(`2 servers and ${WORKERS} workers up; ${ratePerSec} jobs/s for ${durationMs / 60_000} min`);

  const loadStartedAt = Date.now();
  const producing = runProducers(
    {
      urls,
      token: TOKEN,
      singles: Math.round((ratePerSec * durationMs) / 1000),
      loops: 4,
      ratePerSec,
      keyedShare: 0.5,
      workMs: () => 5 + Math.floor(Math.random() * 16),
      runId: randomUUID(),
      giveUpAt: loadStartedAt + durationMs + 60_000,
    },
    interrupted.signal,
  );
  const samples: Sample[] = [];
  const backlog: { atMs: number; ready: number; completed: number }[] = [];
  const admin = createClient({
    url: urls[0] as string,
    jobs: chaosJobs,
    token: TOKEN,
    fetch: failoverFetch({ urls, timeoutMs: () => 10_000 }).fetch,
  }).admin;
  const maxSamples = Math.ceil(durationMs / SAMPLE_EVERY_MS) + 100;
  for (let tick = 0; tick < maxSamples && !interrupted.signal.aborted; tick++) {
    const atMs = Date.now() - loadStartedAt;
    if (atMs > durationMs) break;
    const watched = [
      ...servers.map((server) => ({ process: `server ${server.name}`, pid: server.pid })),
      ...Array.from({ length: WORKERS }, (_, slot) => ({ process: `worker ${slot}`, pid: fleet.pidOf(slot) })),
    ];
    for (const { process: name, pid } of watched) {
      const rssBytes = pid === undefined ? undefined : residentBytes(pid);
      if (pid !== undefined && rssBytes !== undefined) samples.push({ atMs, process: name, pid, rssBytes });
    }
    const stats = await admin.stats().catch(() => undefined);
    if (stats) {
      const count = (state: string) =>
        stats.counts.filter((c) => c.name === 'chaosJob' && c.state === state).reduce((sum, c) => sum + c.count, 0);
      backlog.push({ atMs, ready: count('ready'), completed: count('completed') });
    }
    if (tick % 12 === 0) {
      const last = backlog.at(-1);
      const rss = watched.map((w) => `${w.process} ${mib(samples.findLast((s) => s.pid === w.pid)?.rssBytes)}`);
      log(
        `+${Math.round(atMs / 1000)} s: ${last?.completed ?? '?'} completed, ${last?.ready ?? '?'} ready; ${rss.join(', ')}`,
      );
    }
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, loadStartedAt + atMs + SAMPLE_EVERY_MS - Date.now())),
    );
  }
  interrupted.abort();
  const producers = await producing;
  const loadMs = Date.now() - loadStartedAt;

  // Let what was enqueued finish, then check every acknowledged job completed.
  const expected = producers.acknowledged.length;
  let completed = 0;
  for (let waited = 0; waited < 120_000; waited += 1_000) {
    const stats = await admin.stats().catch(() => undefined);
    completed =
      stats?.counts
        .filter((c) => c.name === 'chaosJob' && c.state === 'completed')
        .reduce((sum, c) => sum + c.count, 0) ?? completed;
    if (completed >= expected) break;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  await fleet.closeAll();
  await Promise.all(servers.map((server) => server.stop()));

  const summary = summarise(samples, loadMs);
  const lines = [
    `soak on ${kind}: ${(loadMs / 60_000).toFixed(1)} min at ${ratePerSec} jobs/s, 2 servers, ${WORKERS} workers`,
    `  enqueues acknowledged ${expected}, completed ${completed}, producer retries ${producers.keyedRetries + producers.unkeyedRetries}, given up ${producers.givenUp.length}`,
    `  ready backlog p50 ${
      percentile(
        backlog.map((b) => b.ready),
        50,
      ) ?? 'n/a'
    }, max ${Math.max(0, ...backlog.map((b) => b.ready))}`,
    `  resident memory: peak over the ${windowMs / 1000} s after the ${warmupMs / 1000} s warm-up -> peak over the last ${windowMs / 1000} s`,
    ...summary.map(
      (row) =>
        `  ${row.process.padEnd(9)} ${mib(row.afterWarmupBytes).padStart(9)} -> ${mib(row.lastBytes).padStart(9)}  ` +
        `${percent(row.growth).padStart(6)}  (lowest ${percent(row.lowestGrowth)}, max ${mib(row.maxBytes)})`,
    ),
    `  unexpected exits: ${unexpectedExits.join('; ') || 'none'}`,
  ];
  const problems = [
    ...summary
      .filter((row) => row.growth === undefined || row.growth >= GROWTH_LIMIT)
      .map((row) => `${row.process} grew ${row.growth === undefined ? '(not measured)' : percent(row.growth)}`),
    ...(completed < expected ? [`${expected - completed} acknowledged jobs did not complete`] : []),
    ...(producers.givenUp.length > 0 ? [`${producers.givenUp.length} enqueues given up`] : []),
    ...unexpectedExits,
  ];
  for (const line of lines) console.log(line);
  for (const problem of problems) console.log(`  FAILED: ${problem}`);
  if (problems.length === 0) console.log(`  passed: every process grew less than ${GROWTH_LIMIT * 100}%`);
  failed = problems.length > 0;
  mkdirSync(dirname(out), { recursive: true });
  const settings = { kind, durationMs, ratePerSec, warmupMs, windowMs, workers: WORKERS, startedAt: startedAtIso };
  writeFileSync(out, JSON.stringify({ settings, summary, problems, expected, completed, samples, backlog }, null, 1));
  console.log(`  samples and figures: ${relative(process.cwd(), out)}`);
} finally {
  await processes.killAll();
  await database?.destroy();
  await rm(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

function percent(ratio: number | undefined): string {
  return ratio === undefined ? 'n/a' : `${ratio >= 0 ? '+' : ''}${(ratio * 100).toFixed(1)}%`;
}

function mib(bytes: number | undefined): string {
  return bytes === undefined ? 'n/a' : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Per process: peak (and lowest) resident memory after warm-up and at the end, and the growth between them. */
function summarise(samples: readonly Sample[], loadMs: number) {
  const names = [...new Set(samples.map((s) => s.process))];
  return names.map((name) => {
    const own = samples.filter((s) => s.process === name);
    const window = (from: number, to: number) =>
      own.filter((s) => s.atMs >= from && s.atMs < to).map((s) => s.rssBytes);
    const first = window(warmupMs, warmupMs + windowMs);
    const last = window(loadMs - windowMs, loadMs + 1);
    const grown = (from: number | undefined, to: number | undefined) =>
      from === undefined || to === undefined ? undefined : to / from - 1;
    const peak = (values: number[]) => (values.length === 0 ? undefined : Math.max(...values));
    const lowest = (values: number[]) => (values.length === 0 ? undefined : Math.min(...values));
    return {
      process: name,
      pids: [...new Set(own.map((s) => s.pid))],
      afterWarmupBytes: peak(first),
      lastBytes: peak(last),
      growth: grown(peak(first), peak(last)),
      lowestGrowth: grown(lowest(first), lowest(last)),
      maxBytes: Math.max(...own.map((s) => s.rssBytes)),
    };
  });
}
