import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Where `--cpu` counts CPU time: this process (the bench, with every
 * in-process system's client and worker), its child processes (the workq
 * server), and the database and cache servers, all read from `/proc` (Linux).
 */
export const CPU_GROUPS = ['bench', 'server', 'postgres', 'mariadb', 'redis'] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];
export type CpuTimes = Record<CpuGroup, number>;

/** A figure for every group, from `figureOf` each. */
export function cpuTimes(figureOf: (group: CpuGroup) => number): CpuTimes {
  return Object.fromEntries(CPU_GROUPS.map((group) => [group, figureOf(group)])) as CpuTimes;
}

/** Server processes by their command name in `/proc/<pid>/stat`. */
const SERVER_COMMANDS: Partial<Record<string, CpuGroup>> = {
  postgres: 'postgres',
  mariadbd: 'mariadb',
  mysqld: 'mariadb',
  'redis-server': 'redis',
};

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
  /** User and system time of the process, and of its exited children that it waited for, in ticks. */
  ticks: number;
}

function readStat(pid: string): ProcessStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    // Fields after the command: state, ppid, …; utime, stime, cutime and cstime are the 12th to 15th.
    const fields = stat.slice(close + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    return { pid: Number(pid), ppid: Number(fields[1]), command: stat.slice(stat.indexOf('(') + 1, close), ticks };
  } catch {
    return undefined; // the process ended while the list was read
  }
}

/**
 * CPU time used so far by each group, in milliseconds; `undefined` where
 * `/proc` is missing. A PostgreSQL backend that exits is counted on in its
 * postmaster's time for waited-for children, so closed connections keep their
 * share.
 */
export function readCpuTimes(): CpuTimes | undefined {
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
  const times = cpuTimes(() => 0);
  for (const stat of stats) {
    const group =
      stat.pid === process.pid ? 'bench' : descendsFromBench(stat.pid) ? 'server' : SERVER_COMMANDS[stat.command];
    if (group) times[group] += stat.ticks * tickMs();
  }
  return times;
}

/** Starts counting (when `enabled`); `perJob(jobs)` is each group's CPU since then, in µs per job. */
export function startCpuMeter(enabled: boolean): { perJob(jobs: number): CpuTimes | undefined } {
  const before = enabled ? readCpuTimes() : undefined;
  return {
    perJob(jobs) {
      const after = before && readCpuTimes();
      if (!before || !after || jobs <= 0) return undefined;
      return cpuTimes((group) => ((after[group] - before[group]) / jobs) * 1000);
    },
  };
}
