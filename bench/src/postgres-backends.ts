import { readFileSync } from 'node:fs';
import { readSocketInodes, readTcpSockets, type TcpSocket } from './proc-net.ts';

/**
 * The PostgreSQL backends that serve the given processes' TCP connections to `port`: the client ends are
 * the sockets the processes hold whose remote port is PostgreSQL's; a backend serves one when it holds the
 * socket whose local port is PostgreSQL's and whose remote end is that client end. Read from `/proc` alone,
 * so it needs the right to read the backends' descriptors (root, or the postgres user).
 */
export function backendsServing(clients: readonly number[], backends: readonly number[], port: number): Set<number> {
  const sockets = readTcpSockets();
  return matchBackends(
    sockets,
    clients.flatMap(readSocketInodes),
    backends.map((pid) => ({ pid, inodes: readSocketInodes(pid) })),
    port,
  );
}

/** `backendsServing` on what was read: the sockets, the clients' socket inodes and each backend's. */
export function matchBackends(
  sockets: readonly TcpSocket[],
  clientInodes: readonly number[],
  backends: readonly { pid: number; inodes: readonly number[] }[],
  port: number,
): Set<number> {
  const held = new Set(clientInodes);
  const clientEnds = new Set(
    sockets.filter((s) => held.has(s.inode) && s.remotePort === port).map((s) => `${s.localAddress}:${s.localPort}`),
  );
  const served = new Set(
    sockets
      .filter((s) => s.localPort === port && clientEnds.has(`${s.remoteAddress}:${s.remotePort}`))
      .map((s) => s.inode),
  );
  return new Set(backends.filter((b) => b.inodes.some((inode) => served.has(inode))).map((b) => b.pid));
}

/**
 * Whether a `postgres` process serves a client connection (`postgres: … user db 127.0.0.1(5432) idle`,
 * `[local]` over a Unix socket) rather than being the postmaster or a background process (checkpointer,
 * background writer, WAL writer, autovacuum, …), from its `/proc/<pid>/cmdline`.
 */
export function isClientBackend(cmdline: string): boolean {
  return /^postgres: .*(\(\d+\)|\[local\])/.test(cmdline);
}

export function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}
