/**
 * Database servers a chaos run has to itself, so it can crash and restart
 * them without touching the shared ones other tests use: a PostgreSQL cluster
 * (initdb into a temporary directory) or a MariaDB server (mariadb-install-db),
 * each on a free port on 127.0.0.1, run in its own process group.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@workq/test-support';
import mysql from 'mysql2/promise';
import pg from 'pg';

export type DatabaseKind = 'postgres' | 'mysql';

export interface PrivateDatabase {
  readonly kind: DatabaseKind;
  /** The store URL a queue server opens. */
  readonly url: string;
  /** How long the first start took, data directory set-up included, in milliseconds. */
  readonly firstStartMs: number;
  /** SIGKILLs every process of the database at once, as a crash would, and waits until they are gone. */
  crash(): Promise<void>;
  /** A clean shutdown (PostgreSQL's fast shutdown, MariaDB's SIGTERM), waited for. */
  shutdown(): Promise<void>;
  /** Starts it again on the same data and port; resolves, with the milliseconds it took, once it answers queries. */
  start(): Promise<number>;
  /** Stops it and removes its data directory. */
  destroy(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 30_000;

/** Starts a private database of `kind`; rejects, with a reason a person can act on, when it cannot be had here. */
export function startPrivateDatabase(kind: DatabaseKind): Promise<PrivateDatabase> {
  return kind === 'postgres' ? startPrivatePostgres() : startPrivateMariadb();
}

interface Runner {
  command: string;
  args: string[];
  /** The OS user to run as (PostgreSQL refuses to run as root). */
  uid?: number;
  gid?: number;
}

/** One database server process and its lifecycle; the kind-specific parts are handed in. */
class DatabaseProcess {
  private child: ChildProcess | undefined;

  constructor(
    private readonly runner: Runner,
    private readonly logFile: string,
    private readonly ready: () => Promise<void>,
  ) {}

  async start(): Promise<number> {
    const startedAt = Date.now();
    const log = openSync(this.logFile, 'a');
    try {
      this.child = spawn(this.runner.command, this.runner.args, {
        stdio: ['ignore', log, log],
        detached: true,
        ...(this.runner.uid === undefined ? {} : { uid: this.runner.uid, gid: this.runner.gid }),
      });
    } finally {
      closeSync(log);
    }
    let exited: string | undefined;
    this.child.once('exit', (code, signal) => {
      exited = String(signal ?? code);
    });
    this.child.once('error', (error) => {
      exited = error.message;
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (exited !== undefined) {
        throw new Error(`${this.runner.command} exited (${exited}) while starting:\n${this.logTail()}`);
      }
      if (Date.now() > deadline) {
        await this.kill('SIGKILL');
        throw new Error(`${this.runner.command} did not answer within ${READY_TIMEOUT_MS} ms:\n${this.logTail()}`);
      }
      try {
        await this.ready();
        return Date.now() - startedAt;
      } catch {
        await sleep(50);
      }
    }
  }

  /** Signals the server's whole process group and waits until no process of it is left. */
  async kill(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (child?.pid === undefined) return;
    const group = -child.pid;
    // SIGKILL reaches every process of the group; a clean shutdown signal goes to the server, which stops the rest.
    signalProcess(signal === 'SIGKILL' ? group : child.pid, signal);
    const deadline = Date.now() + EXIT_TIMEOUT_MS;
    while (signalProcess(group, 0)) {
      if (Date.now() > deadline) {
        signalProcess(group, 'SIGKILL');
        if (Date.now() > deadline + 5_000) throw new Error(`${this.runner.command} (pid ${child.pid}) did not exit`);
      }
      await sleep(20);
    }
    this.child = undefined;
  }

  logTail(): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-15).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/** `process.kill`, returning whether the target existed. */
function signalProcess(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** uid and gid of an OS user, from /etc/passwd; `undefined` when there is no such user. */
function osUser(name: string): { uid: number; gid: number } | undefined {
  if (!existsSync('/etc/passwd')) return undefined;
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name) return { uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** The newest PostgreSQL server binaries here: `WORKQ_CHAOS_PG_BIN`, else `/usr/lib/postgresql/<n>/bin`. */
function postgresBinDir(): string | undefined {
  const configured = process.env.WORKQ_CHAOS_PG_BIN;
  if (configured) return configured;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

async function startPrivatePostgres(): Promise<PrivateDatabase> {
  const startedAt = Date.now();
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL server binaries (initdb) under /usr/lib/postgresql; set WORKQ_CHAOS_PG_BIN');
  // PostgreSQL will not run as root: as root, it runs as the `postgres` OS user.
  const user = isRoot() ? osUser('postgres') : undefined;
  if (isRoot() && !user) throw new Error('running as root and there is no `postgres` OS user to run PostgreSQL as');
  const dir = await mkdtemp(join(tmpdir(), 'workq-chaos-pg-'));
  const data = join(dir, 'data');
  const sockets = join(dir, 'sock');
  mkdirSync(sockets);
  if (user) {
    chownSync(dir, user.uid, user.gid);
    chownSync(sockets, user.uid, user.gid);
  }
  const initdb = spawnSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { encoding: 'utf8', ...(user ?? {}) },
  );
  if (initdb.status !== 0) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${initdb.error?.message ?? ''}${initdb.stderr}`);
  }
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const args = ['-D', data, '-p', String(port), '-k', sockets, '-c', 'listen_addresses=127.0.0.1'];
  const server = new DatabaseProcess(
    { command: join(bin, 'postgres'), args: [...args, '-c', 'max_connections=200'], ...(user ?? {}) },
    join(dir, 'postgres.log'),
    async () => {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('SELECT 1');
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  );
  return finishStart('postgres', url, dir, server, startedAt);
}

async function startPrivateMariadb(): Promise<PrivateDatabase> {
  const startedAt = Date.now();
  const mariadbd = ['/usr/sbin/mariadbd', '/usr/sbin/mysqld'].find((path) => existsSync(path));
  const installDb = ['/usr/bin/mariadb-install-db', '/usr/bin/mysql_install_db'].find((path) => existsSync(path));
  if (!mariadbd || !installDb) throw new Error('no MariaDB server binaries (/usr/sbin/mariadbd, mariadb-install-db)');
  const dir = await mkdtemp(join(tmpdir(), 'workq-chaos-mariadb-'));
  const data = join(dir, 'data');
  // --no-defaults everywhere: the machine's my.cnf names the shared server's pid file, socket and port.
  const asUser = isRoot() ? ['--user=root'] : [];
  const install = spawnSync(
    installDb,
    ['--no-defaults', `--datadir=${data}`, ...asUser, '--auth-root-authentication-method=normal', '--skip-test-db'],
    { encoding: 'utf8' },
  );
  if (install.status !== 0) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`mariadb-install-db failed: ${install.error?.message ?? ''}${install.stdout}${install.stderr}`);
  }
  const port = await freePort();
  const args = [
    '--no-defaults',
    `--datadir=${data}`,
    ...asUser,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    `--socket=${join(dir, 'mariadb.sock')}`,
    `--pid-file=${join(dir, 'mariadb.pid')}`,
    `--log-error=${join(dir, 'mariadb.log')}`,
    `--tmpdir=${dir}`,
    '--skip-name-resolve',
    '--skip-grant-tables',
    '--max-connections=300',
    '--innodb-buffer-pool-size=128M',
  ];
  const admin = { host: '127.0.0.1', port, user: 'root', connectTimeout: 2_000 };
  const server = new DatabaseProcess({ command: mariadbd, args }, join(dir, 'mariadb.log'), async () => {
    const connection = await mysql.createConnection(admin);
    try {
      await connection.query('SELECT 1');
    } finally {
      await connection.end().catch(() => undefined);
    }
  });
  const database = await finishStart('mysql', `mysql://root@127.0.0.1:${port}/chaos`, dir, server, startedAt);
  const connection = await mysql.createConnection(admin);
  try {
    await connection.query('CREATE DATABASE chaos');
  } finally {
    await connection.end();
  }
  return database;
}

async function finishStart(
  kind: DatabaseKind,
  url: string,
  dir: string,
  server: DatabaseProcess,
  startedAt: number,
): Promise<PrivateDatabase> {
  try {
    await server.start();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  let destroyed = false;
  return {
    kind,
    url,
    firstStartMs: Date.now() - startedAt,
    crash: () => server.kill('SIGKILL'),
    shutdown: () => server.kill(kind === 'postgres' ? 'SIGINT' : 'SIGTERM'),
    start: () => server.start(),
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await server.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
