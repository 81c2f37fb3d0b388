import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * `node` arguments that run this repository's TypeScript in a child process as the suite runs it: tsx, with the
 * workspace packages resolved to their sources (typescript-loader.mjs). The loader is imported by `node --import`,
 * not run under tsx's launcher, so a signal reaches the child itself, which the launcher's relay (it kills a child
 * that does not confirm a relayed signal within milliseconds) cannot promise on a loaded machine.
 */
export const RUN_TYPESCRIPT: readonly string[] = ['--import', new URL('./typescript-loader.mjs', import.meta.url).href];

/**
 * Child processes a test starts. Each runs in its own process group, so
 * `killAll()` also ends whatever it spawned (e.g. a launcher's child), by pid.
 */
export class ChildProcesses {
  private readonly children = new Set<ChildProcess>();

  /** Starts `node <args>` in the repository root with captured stdout and stderr. */
  spawnNode(args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcess & { output: () => string } {
    return this.spawn(process.execPath, args, { env });
  }

  /** Starts a command with captured stdout and stderr; `cwd` defaults to the repository root. */
  spawn(
    command: string,
    args: readonly string[],
    options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
  ): ChildProcess & { output: () => string } {
    const child = spawn(command, [...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString('utf8');
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    return Object.assign(child, { output: () => output });
  }

  /** Sends `signal` to the child, or with `group` to its whole process group (what it spawned, too). */
  signal(child: ChildProcess, signal: NodeJS.Signals, options: { group?: boolean } = {}): void {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(options.group ? -child.pid : child.pid, signal);
    } catch {
      // Already gone.
    }
  }

  /** SIGKILLs every child still running (with its group) and waits for each to exit. */
  async killAll(): Promise<void> {
    const running = [...this.children];
    for (const child of running) this.signal(child, 'SIGKILL', { group: true });
    await Promise.all(running.map((child) => exited(child)));
  }
}

/** Resolves with the exit code (or signal) once the child has exited. */
export function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/**
 * The URL a `workq-server` child started with `--port 0` listens on, read from its "listening" log line: the
 * port is the one the server itself bound, so no other process can hold it (a port found free beforehand can be
 * taken by another test's server before this one binds it). Rejects, with the child's output, if it exits first
 * or does not say within `timeoutMs`.
 */
export async function listeningUrl(
  child: ChildProcess & { output: () => string },
  timeoutMs = 60_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = child
      .output()
      .split('\n')
      .find((each) => each.includes('workq queue server listening'));
    if (line) return (JSON.parse(line) as { url: string }).url;
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      throw new Error(`the server did not say where it listens:\n${child.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
