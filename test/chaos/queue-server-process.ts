/**
 * A queue server in its own process (`workq-server` from source), on a fixed
 * port so it comes back at the same address after a kill.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@workq/test-support';
import { exited, REPO_ROOT } from '../support/processes.ts';
import type { NodeProcesses } from './node-processes.ts';

const CLI = join(REPO_ROOT, 'apps', 'queue-server', 'src', 'cli.ts');
const START_TIMEOUT_MS = 60_000;

export interface QueueServerProcessOptions {
  name: string;
  store: string;
  port: number;
  /** The token every client of the run uses; it has every scope. */
  token: string;
  logFile: string;
  /** More command-line options, e.g. a limit. */
  args?: readonly string[];
  processes: NodeProcesses;
  /** Called when the process exits without the harness having killed it. */
  onUnexpectedExit: (name: string, how: string) => void;
}

export class QueueServerProcess {
  readonly url: string;
  private child: ChildProcess | undefined;
  /** Only an exit while `running` is unexpected: one while starting means its store is down, and is retried. */
  private phase: 'starting' | 'running' | 'stopping' = 'stopping';
  /** Times this process was started, the first start included. */
  starts = 0;
  /** Starts that exited before the server was ready (its store was down), and were retried. */
  failedStarts = 0;

  constructor(private readonly options: QueueServerProcessOptions) {
    this.url = `http://127.0.0.1:${options.port}`;
  }

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Starts the server and resolves, with the milliseconds it took, once `/readyz` answers 200. A server that
   * exits while starting (its store is down) is started again, until START_TIMEOUT_MS.
   */
  async start(): Promise<number> {
    const startedAt = Date.now();
    const { store, port, token, logFile, processes, args = [] } = this.options;
    for (let tries = 1; ; tries++) {
      this.phase = 'starting';
      const child = processes.start(
        CLI,
        ['--store', store, '--port', String(port), '--token', `${token}=admin`, ...args],
        { logFile },
      );
      this.child = child;
      this.starts++;
      child.once('exit', (code, signal) => {
        if (this.phase === 'running' && this.child === child) {
          this.options.onUnexpectedExit(this.name, String(signal ?? code));
        }
      });
      while (child.exitCode === null && child.signalCode === null) {
        if (await this.ready()) {
          this.phase = 'running';
          return Date.now() - startedAt;
        }
        if (Date.now() - startedAt > START_TIMEOUT_MS) {
          await this.kill();
          throw new Error(`queue server ${this.name} not ready within ${START_TIMEOUT_MS} ms (${tries} tries)`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      this.failedStarts++;
      if (Date.now() - startedAt > START_TIMEOUT_MS) {
        throw new Error(`queue server ${this.name} kept exiting while starting (${tries} tries); see ${logFile}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** SIGKILLs the server and waits for it to exit. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.phase = 'stopping';
    await this.options.processes.kill(child);
  }

  /** Stops the server cleanly (SIGTERM), waited for. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.phase = 'stopping';
    this.options.processes.signal(child, 'SIGTERM');
    await exited(child);
  }

  /** Whether the server answers `/healthz` with 200. */
  async serving(): Promise<boolean> {
    const status = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
      (response) => response.status,
      () => 0,
    );
    return status === 200;
  }

  /** The server's Prometheus text, or `undefined` when it does not answer. */
  async metrics(): Promise<string | undefined> {
    try {
      const response = await fetch(`${this.url}/metrics`, {
        headers: { authorization: `Bearer ${this.options.token}` },
        signal: AbortSignal.timeout(5_000),
      });
      return response.ok ? await response.text() : undefined;
    } catch {
      return undefined;
    }
  }

  private async ready(): Promise<boolean> {
    try {
      const response = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      return response.status === 200;
    } catch {
      return false;
    }
  }
}

/**
 * One queue server process on `store` for a one-off probe, started and ready, its log in a fresh temporary
 * directory; `args` adds options. Stop it with `stop()`.
 */
export async function startProbeServer(
  name: string,
  options: { store: string; token: string; processes: NodeProcesses; args?: readonly string[] },
): Promise<QueueServerProcess> {
  const server = new QueueServerProcess({
    name,
    ...options,
    port: await freePort(),
    logFile: join(mkdtempSync(join(tmpdir(), `workq-${name}-`)), 'server.log'),
    onUnexpectedExit: (_, how) => console.error(`the server exited (${how})`),
  });
  await server.start();
  return server;
}

/** The value of one counter in Prometheus text, summed over its labels; 0 when absent. */
export function counterValue(metrics: string, name: string): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
