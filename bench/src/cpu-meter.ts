import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { SERVICES } from './config.ts';
import { backendsServing, isClientBackend, readCmdline } from './postgres-backends.ts';

/**
 * Where `--cpu` counts CPU time: this process (the bench, with every in-process system's client and
 * worker), its child processes (the workq server), the PostgreSQL backends serving those two's own
 * connections (`postgres`), PostgreSQL's background processes (`postgres-bg`: postmaster, WAL writer,
 * checkpointer, background writer, autovacuum, whoever they worked for), and MariaDB and Redis whole, all
 * read from `/proc` (Linux). These groups add up to a row's total.
 */
export const CPU_GROUPS = ['bench', 'server', 'postgres', 'postgres-bg', 'mariadb', 'redis'] as const;
/** The groups, and every PostgreSQL process whole (`postgres-whole`), shown beside them and never summed. */
export const CPU_COLUMNS = [...CPU_GROUPS, 'postgres-whole'] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];
export type CpuColumn = (typeof CPU_COLUMNS)[number];
export type CpuTimes = Record<CpuColumn, number>;

/** A figure for every column, from `figureOf` each. */
export function cpuTimes(figureOf: (column: CpuColumn) => number): CpuTimes {
  return Object.fromEntries(CPU_COLUMNS.map((column) => [column, figureOf(column)])) as CpuTimes;
}

/** The sum of a row's groups (`postgres-whole` left out: it overlaps `postgres` and `postgres-bg`). */
export function cpuSum(times: CpuTimes): number {
  return CPU_GROUPS.reduce((sum, group) => sum + times[group], 0);
}

/** Server processes counted whole, by their command name in `/proc/<pid>/stat`. */
const WHOLE_COMMANDS: Partial<Record<string, 'postgres-whole' | 'mariadb' | 'redis'>> = {
  postgres: 'postgres-whole',
  mariadbd: 'mariadb',
  mysqld: 'mariadb',
  'redis-server': 'redis',
};

const POSTGRES_PORT = Number(new URL(SERVICES.postgresUrl).port || 5432);

let msPerTick: number | undefined;
function tickMs(): number {
  if (msPerTick === undefined) {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    msPerTick = 1000 / (Number.isFinite(ticks) && ticks > 0 ? ticks : 100);
  }
  return msPerTick;
}

interface ProcessStat {
  pid: number;
  ppid: number;
  command: string;
  /** Start time since boot, in ticks: with the pid, names the process even once its pid is reused. */
  startTicks: string;
  /** User and system time of the process itself, in ticks. */
  ownTicks: number;
  /** `ownTicks` and the time of its exited children that it waited for, in ticks. */
  ticks: number;
}

function readStat(pid: string): ProcessStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    // Fields after the command: state, ppid, …; utime, stime, cutime and cstime are the 12th to 15th, starttime the 20th.
    const fields = stat.slice(close + 2).split(' ');
    const ownTicks = Number(fields[11]) + Number(fields[12]);
    return {
      pid: Number(pid),
      ppid: Number(fields[1]),
      command: stat.slice(stat.indexOf('(') + 1, close),
      startTicks: fields[19] as string,
      ownTicks,
      ticks: ownTicks + Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return undefined; // the process ended while the list was read
  }
}

/** What one reading of `/proc` found: times in ms, PostgreSQL's per process. */
export interface CpuReading {
  /** The groups counted from this process tree and by command name. */
  whole: Record<'bench' | 'server' | 'postgres-whole' | 'mariadb' | 'redis', number>;
  /** Each PostgreSQL process's own time, by `pid:start`. */
  postgres: Map<string, number>;
  /** The backends serving this process tree's connections, by `pid:start`. */
  ownBackends: Set<string>;
  /** The PostgreSQL processes that serve no connection, the postmaster included, by `pid:start`. */
  background: Set<string>;
}

/**
 * CPU time used so far by each group; `undefined` where `/proc` is missing. A reading reads every process's
 * times and the sockets of this process tree, which costs this process tens of milliseconds: its own time
 * is read last in a span's first reading (`ownAt: 'last'`) and first in its last one (`'first'`), so that
 * the meter's own work falls outside every span it measures and stays out of the `bench` column.
 */
export function readCpu(ownAt: 'first' | 'last' = 'first'): CpuReading | undefined {
  const ownFirst = ownAt === 'first' ? readStat(String(process.pid)) : undefined;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  const stats = pids.map(readStat).filter((s): s is ProcessStat => s !== undefined);
  const parents = new Map(stats.map((s) => [s.pid, s.ppid]));
  const descendsFromBench = (pid: number): boolean => {
    for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at)) {
      if (at === process.pid) return true;
    }
    return false;
  };
  const reading: CpuReading = {
    whole: { bench: 0, server: 0, 'postgres-whole': 0, mariadb: 0, redis: 0 },
    postgres: new Map(),
    ownBackends: new Set(),
    background: new Set(),
  };
  const tree: number[] = [];
  const postgres = stats.filter((s) => s.command === 'postgres');
  for (const stat of stats) {
    const inTree = stat.pid === process.pid || descendsFromBench(stat.pid);
    if (inTree) tree.push(stat.pid);
    // An exited backend is counted on in its postmaster's time for waited-for children, so the
    // whole figure keeps the share of closed connections.
    if (stat.pid === process.pid) continue;
    const group = inTree ? 'server' : WHOLE_COMMANDS[stat.command];
    if (group) reading.whole[group] += stat.ticks * tickMs();
  }
  const key = (s: ProcessStat) => `${s.pid}:${s.startTicks}`;
  const backends = new Set(
    backendsServing(
      tree,
      postgres.map((s) => s.pid),
      POSTGRES_PORT,
    ),
  );
  const postgresPids = new Set(postgres.map((s) => s.pid));
  for (const stat of postgres) {
    reading.postgres.set(key(stat), stat.ownTicks * tickMs());
    if (backends.has(stat.pid)) reading.ownBackends.add(key(stat));
    else if (!postgresPids.has(stat.ppid) || !isClientBackend(readCmdline(stat.pid))) reading.background.add(key(stat));
  }
  const own = ownFirst ?? readStat(String(process.pid));
  reading.whole.bench = (own?.ticks ?? 0) * tickMs();
  return reading;
}

/**
 * The time the given PostgreSQL processes (seen as theirs at either end, or at a mark between) used between
 * `before` and the last of `later` (marks in order, then the span's end) that still shows each. A process
 * that exited in the span loses what it used after the last reading that showed it, as `/proc` no longer
 * shows it (its time moves into the postmaster's for waited-for children, which names no connection); one
 * born in the span is counted from zero.
 */
function spent(before: CpuReading, later: readonly CpuReading[], keys: ReadonlySet<string>): number {
  let ms = 0;
  for (const key of keys) {
    const from = before.postgres.get(key) ?? 0;
    const last = later.findLast((reading) => reading.postgres.has(key));
    ms += (last?.postgres.get(key) ?? from) - from;
  }
  return ms;
}

/** Each column's CPU between two readings, in ms; `marks`, readings taken between them, name backends too. */
export function cpuBetween(before: CpuReading, after: CpuReading, marks: readonly CpuReading[] = []): CpuTimes {
  const later = [...marks, after];
  const union = (pick: (reading: CpuReading) => ReadonlySet<string>) =>
    new Set([before, ...later].flatMap((reading) => [...pick(reading)]));
  const ownBackends = union((reading) => reading.ownBackends);
  const background = union((reading) => reading.background);
  return cpuTimes((column) => {
    if (column === 'postgres') return spent(before, later, ownBackends);
    if (column === 'postgres-bg') return spent(before, later, background);
    return after.whole[column] - before.whole[column];
  });
}

/**
 * Starts counting (when `enabled`); `perJob(jobs)` is each column's CPU since then, in µs per job. `mark()`
 * reads which backends serve this process tree before a system closes connections it opened in the span
 * (a consumer stopping), so their time up to the mark counts; a mark's own cost is kept out of `bench`.
 */
export function startCpuMeter(enabled: boolean): { mark(): void; perJob(jobs: number): CpuTimes | undefined } {
  const before = enabled ? readCpu('last') : undefined;
  const marks: CpuReading[] = [];
  let markingMs = 0;
  return {
    mark() {
      if (!before) return;
      const start = process.cpuUsage();
      const reading = readCpu();
      const { user, system } = process.cpuUsage(start);
      markingMs += (user + system) / 1000;
      if (reading) marks.push(reading);
    },
    perJob(jobs) {
      const after = before && readCpu('first');
      if (!before || !after || jobs <= 0) return undefined;
      const ms = cpuBetween(before, after, marks);
      ms.bench = Math.max(0, ms.bench - markingMs);
      return cpuTimes((column) => (ms[column] / jobs) * 1000);
    },
  };
}
