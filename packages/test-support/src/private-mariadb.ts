import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { freePort } from './ports.ts';

const SERVER_BINARY = '/usr/sbin/mariadbd';
const INSTALL_BINARIES = ['/usr/bin/mariadb-install-db', '/usr/bin/mysql_install_db'];
/** How long installing the system tables, and then starting the server, may each take. */
const INSTALL_TIMEOUT_MS = 60_000;
const START_TIMEOUT_MS = 30_000;

/** A MariaDB server of a test's own: its URL (root, empty password, database `test`), and how to stop it. */
export interface PrivateMariadb {
  url: string;
  /** Ends the server by its pid and removes its data directory. */
  stop: () => Promise<void>;
}

/** What a test can set on its private server, as the server's command-line options. */
export interface PrivateMariadbOptions {
  /** The server's global `sql_mode`, e.g. `'NO_BACKSLASH_ESCAPES'`. @defaultValue the server's default */
  sqlMode?: string;
}

/**
 * Starts a MariaDB server of the test's own, in a fresh temporary data
 * directory on a free loopback port, so a test can set global settings (an
 * `sql_mode`) that would disturb other tests on the shared server. Resolves to
 * the server, or to the reason it cannot run here (no MariaDB binaries, or
 * start-up failed within its time), which the test prints as its skip reason.
 * Start-up is bounded; a server that does not come up is killed by its pid.
 */
export async function startPrivateMariadb(options: PrivateMariadbOptions = {}): Promise<PrivateMariadb | string> {
  const install = INSTALL_BINARIES.find((path) => existsSync(path));
  if (!existsSync(SERVER_BINARY) || install === undefined) {
    return `no MariaDB server binaries (${SERVER_BINARY}, mariadb-install-db) on this machine`;
  }
  const dir = await mkdtemp(join(tmpdir(), 'workq-mariadb-'));
  const removeDir = () => rm(dir, { recursive: true, force: true }).catch(() => undefined);
  const datadir = join(dir, 'data');
  const user = process.getuid?.() === 0 ? ['--user=root'] : [];
  try {
    await promisify(execFile)(
      install,
      ['--no-defaults', `--datadir=${datadir}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...user],
      { timeout: INSTALL_TIMEOUT_MS },
    );
  } catch (error) {
    await removeDir();
    return `mariadb-install-db failed: ${(error as Error).message.split('\n')[0]}`;
  }
  const port = await freePort();
  const args = [
    '--no-defaults',
    `--datadir=${datadir}`,
    `--socket=${join(dir, 'mariadb.sock')}`,
    `--pid-file=${join(dir, 'mariadb.pid')}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    '--skip-name-resolve',
    '--innodb-buffer-pool-size=32M',
    '--skip-log-bin',
    ...user,
    ...(options.sqlMode === undefined ? [] : [`--sql-mode=${options.sqlMode}`]),
  ];
  const server = spawn(SERVER_BINARY, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  // A test process that exits without `stop()` (a crash, a timeout) leaves no server behind.
  const killOnExit = () => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  let log = '';
  server.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4_000);
  });
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    await killByPid(server);
    await removeDir();
  };
  const rootUrl = `mysql://root@127.0.0.1:${port}/`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (server.exitCode !== null || server.signalCode !== null) {
      await stop();
      return `mariadbd exited at start-up: ${lastLine(log)}`;
    }
    try {
      const connection = await mysql.createConnection({ uri: rootUrl, connectTimeout: 1_000 });
      try {
        await connection.query('CREATE DATABASE IF NOT EXISTS test');
      } finally {
        await connection.end();
      }
      return { url: `${rootUrl}test`, stop };
    } catch (error) {
      if (Date.now() > deadline) {
        await stop();
        return `mariadbd did not accept connections within ${START_TIMEOUT_MS} ms: ${(error as Error).message}`;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Sends SIGTERM to the server's pid, then SIGKILL if it has not exited within 10 s. */
async function killByPid(server: ChildProcess): Promise<void> {
  if (server.pid === undefined || server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  process.kill(server.pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (server.pid !== undefined && server.exitCode === null) process.kill(server.pid, 'SIGKILL');
  }, 10_000);
  await exited;
  clearTimeout(timer);
}

function lastLine(log: string): string {
  return (
    log
      .trim()
      .split('\n')
      .filter((line) => /ERROR/i.test(line))
      .pop() ?? 'no error logged'
  );
}
