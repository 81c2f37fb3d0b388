/**
 * The chaos run's worker processes: a fixed number of slots, each running one
 * worker process at a time (see worker-process.ts) with its own run log. A
 * killed worker is replaced at once by a new process in its slot.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '@workq/test-support';
import { exited } from '../support/processes.ts';
import type { NodeProcesses } from './node-processes.ts';

const WORKER_ENTRY = join(import.meta.dirname, 'worker-process.ts');
const CLOSE_TIMEOUT_MS = 20_000;

export interface WorkerFleetOptions {
  slots: number;
  concurrency: number;
  /** Server base URLs; slot i's worker calls server i modulo their number first. */
  urls: readonly string[];
  token: string;
  dir: string;
  processes: NodeProcesses;
  /** Whether workers write run logs (see run-log.ts). @defaultValue true */
  runLogs?: boolean;
  /** Called when a worker exits without the harness having killed it. */
  onUnexpectedExit: (pid: number, how: string) => void;
}

interface Slot {
  index: number;
  child: ChildProcess;
  stopped: boolean;
  /** Set before the harness kills it, so its exit is not taken for a crash. */
  killed: boolean;
}

export class WorkerFleet {
  private readonly slots: Slot[] = [];
  /** Every run log written, one per worker process (named, though not written, without run logs). */
  readonly logFiles: string[] = [];
  /** Each worker process's pid, in start order. */
  readonly pids: number[] = [];
  private closing = false;

  constructor(private readonly options: WorkerFleetOptions) {}

  startAll(): void {
    for (let index = 0; index < this.options.slots; index++) this.slots.push(this.spawn(index));
  }

  /** Resolves once every worker started so far has said it is ready. */
  async whenReady(timeoutMs: number): Promise<void> {
    const said = (runLog: string) => {
      try {
        return readFileSync(runLog.replace(/\.jsonl$/, '.out'), 'utf8').includes('ready');
      } catch {
        return false;
      }
    };
    await until(() => this.logFiles.every(said), timeoutMs, 100);
  }

  /** Slots whose worker is running and not stopped. */
  get runnable(): number[] {
    return this.slots.filter((slot) => !slot.stopped).map((slot) => slot.index);
  }

  /** SIGKILLs the worker in `slot`, waits for it to die, and starts a new one there. Resolves to the killed pid. */
  async kill(index: number): Promise<number> {
    const slot = this.slot(index);
    const { child } = slot;
    slot.killed = true;
    await this.options.processes.kill(child);
    this.slots[index] = this.spawn(index);
    return child.pid as number;
  }

  /** SIGSTOPs the worker in `slot`; resolves to its pid. Its slot is not killed until `resume`. */
  pause(index: number): number {
    const slot = this.slot(index);
    slot.stopped = true;
    this.options.processes.signal(slot.child, 'SIGSTOP');
    return slot.child.pid as number;
  }

  resume(index: number): void {
    const slot = this.slot(index);
    this.options.processes.signal(slot.child, 'SIGCONT');
    slot.stopped = false;
  }

  pidOf(index: number): number {
    return this.slot(index).child.pid as number;
  }

  /** Asks every worker to close (SIGTERM: finish running jobs, send their acks), then SIGKILLs any left. */
  async closeAll(): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.slots.map(async ({ child, stopped }) => {
        if (stopped) this.options.processes.signal(child, 'SIGCONT');
        this.options.processes.signal(child, 'SIGTERM');
        const timeout = new Promise((resolve) => setTimeout(resolve, CLOSE_TIMEOUT_MS).unref());
        await Promise.race([exited(child), timeout]);
        await this.options.processes.kill(child);
      }),
    );
  }

  private slot(index: number): Slot {
    const slot = this.slots[index];
    if (!slot) throw new Error(`no worker slot ${index}`);
    return slot;
  }

  private spawn(index: number): Slot {
    const { urls, token, dir, processes, concurrency } = this.options;
    const generation = this.logFiles.length;
    const runLog = join(dir, `worker-${generation}.jsonl`);
    const runLogs = this.options.runLogs ?? true;
    if (runLogs) writeFileSync(runLog, '');
    const ordered = urls.map((_, i) => urls[(index + i) % urls.length] as string);
    const child = processes.start(WORKER_ENTRY, [], {
      logFile: join(dir, `worker-${generation}.out`),
      env: {
        CHAOS_URLS: ordered.join(','),
        CHAOS_TOKEN: token,
        CHAOS_RUN_LOG: runLogs ? runLog : '',
        CHAOS_CONCURRENCY: String(concurrency),
      },
    });
    this.logFiles.push(runLog);
    this.pids.push(child.pid as number);
    const slot: Slot = { index, child, stopped: false, killed: false };
    child.once('exit', (code, signal) => {
      if (this.closing || slot.killed) return;
      this.options.onUnexpectedExit(child.pid as number, String(signal ?? code));
      this.slots[index] = this.spawn(index);
    });
    return slot;
  }
}
