import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** One row of `/proc/net/tcp` or `/proc/net/tcp6`: a TCP socket's two ends and its inode. */
export interface TcpSocket {
  /** The local address as the kernel prints it (hex, in its byte order); compared, never decoded. */
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  inode: number;
}

/**
 * The sockets of a `/proc/net/tcp` or `/proc/net/tcp6` table: its header line is skipped, and so is a
 * socket with inode 0 (one in TIME_WAIT, which no process holds any more).
 */
export function parseTcpTable(text: string): TcpSocket[] {
  const sockets: TcpSocket[] = [];
  for (const line of text.split('\n').slice(1)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10) continue;
    const local = endpoint(fields[1] as string);
    const remote = endpoint(fields[2] as string);
    const inode = Number(fields[9]);
    if (!local || !remote || !Number.isInteger(inode) || inode <= 0) continue;
    sockets.push({
      localAddress: local.address,
      localPort: local.port,
      remoteAddress: remote.address,
      remotePort: remote.port,
      inode,
    });
  }
  return sockets;
}

function endpoint(text: string): { address: string; port: number } | undefined {
  const colon = text.lastIndexOf(':');
  const port = Number.parseInt(text.slice(colon + 1), 16);
  return colon > 0 && Number.isInteger(port) ? { address: text.slice(0, colon), port } : undefined;
}

/** The inode of a `/proc/<pid>/fd/<n>` link that names a socket (`socket:[12345]`), else `undefined`. */
export function socketInode(link: string): number | undefined {
  const match = /^socket:\[(\d+)\]$/.exec(link);
  return match ? Number(match[1]) : undefined;
}

/** Every TCP socket of this network namespace, IPv4 and IPv6. */
export function readTcpSockets(): TcpSocket[] {
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((path) => {
    try {
      return parseTcpTable(readFileSync(path, 'utf8'));
    } catch {
      return [];
    }
  });
}

/** The inodes of the sockets a process holds open; none for a process that ended or is not ours to read. */
export function readSocketInodes(pid: number): number[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  const inodes: number[] = [];
  for (const fd of fds) {
    try {
      const inode = socketInode(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (inode !== undefined) inodes.push(inode);
    } catch {
      // the descriptor was closed while the list was read
    }
  }
  return inodes;
}
