/**
 * Node processes a chaos run or soak starts: TypeScript entry points run
 * as the suite runs them (`RUN_TYPESCRIPT`; one process per entry, so its pid is the one to
 * signal and to sample), each in its own process group, output appended to a
 * log file. `killAll()` ends every one still running, by pid.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { exited, REPO_ROOT, RUN_TYPESCRIPT } from '../support/processes.ts';

export class NodeProcesses {
  private readonly running = new Set<ChildProcess>();

  /** Runs `entry` (a TypeScript file) with `args`; stdout and stderr are appended to `logFile`. */
  start(entry: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; logFile: string }): ChildProcess {
    const log = openSync(options.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, [...RUN_TYPESCRIPT, entry, ...args], {
        cwd: REPO_ROOT,
        env: { ...process.env, ...options.env },
        stdio: ['ignore', log, log],
        detached: true,
      });
    } finally {
      closeSync(log);
    }
    this.running.add(child);
    child.once('exit', () => this.running.delete(child));
    return child;
  }

  /** Sends `signal` to the child; `false` when it had already exited. */
  signal(child: ChildProcess, signal: NodeJS.Signals): boolean {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return false;
    try {
      process.kill(child.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** SIGKILLs the child (and its group) and waits for it to exit. */
  async kill(child: ChildProcess): Promise<void> {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await exited(child);
  }

  /** SIGKILLs every child still running and waits for each to exit. */
  async killAll(): Promise<void> {
    await Promise.all([...this.running].map((child) => this.kill(child)));
  }
}

/** Resident memory of a process in bytes (Linux `/proc`); `undefined` once it is gone. */
export function residentBytes(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
