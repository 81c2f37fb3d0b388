import { describe, expect, it } from 'vitest';
import { isClientBackend, matchBackends } from './postgres-backends.ts';
import { parseTcpTable, socketInode } from './proc-net.ts';

// Read from this machine's /proc/net/tcp with two psql sessions open on 127.0.0.1:5432 (0x1538):
// the listener, a connection in TIME_WAIT (inode 0), and each session's two ends: client port
// 0xD4F8 (inode 119679) served by inode 119680, client port 0xD4F4 (inode 119994) by inode 119408.
const TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   101        0 5243 1 000000005a5208c4 100 0 0 10 0
  42: 0100007F:1538 0100007F:AFEE 06 00000000:00000000 03:000006D3 00000000     0        0 0 3 00000000113a4187
  76: 0100007F:1538 0100007F:D4F8 01 00000000:00000000 02:000AFC1C 00000000   101        0 119680 2 00000000740e0d88 20 4 26 12 -1
 534: 0100007F:1538 0100007F:D4F4 01 00000000:00000000 02:000AFC1F 00000000   101        0 119408 2 0000000075b3f367 20 4 26 12 -1
 877: 0100007F:D4F8 0100007F:1538 01 00000000:00000000 02:000AFC19 00000000     0        0 119679 2 00000000b57e05e9 20 4 29 13 -1
1570: 0100007F:D4F4 0100007F:1538 01 00000000:00000000 02:000AFC1E 00000000     0        0 119994 2 0000000032d9a533 20 4 29 13 -1
`;

// From /proc/net/tcp6: two listeners on all addresses.
const TCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:18EB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4835 1 000000004714e1b3 100 0 0 10 0
   1: 00000000000000000000000001000000:1111 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   106        0 6514 1 00000000b1638ec7 100 0 0 10 0
`;

// readlink of a psql process's /proc/<pid>/fd/* and of its backend's.
const CLIENT_FDS = ['/dev/null', '/dev/null', '/dev/null', 'pipe:[119675]', 'socket:[119679]'];
const BACKEND_FDS = [
  '/dev/null',
  '/var/log/postgresql/postgresql-15-main.log',
  'pipe:[5242]',
  'anon_inode:[eventpoll]',
  '/var/lib/postgresql/15/main/base/16386/2601',
  'socket:[119680]',
  'anon_inode:[signalfd]',
];
const inodes = (links: readonly string[]) => links.flatMap((link) => socketInode(link) ?? []);

describe('/proc/net/tcp', () => {
  it('reads each socket with its ports in decimal and its inode, and skips the header and TIME_WAIT', () => {
    const sockets = parseTcpTable(TCP);
    expect(sockets.map((s) => s.inode)).toEqual([5243, 119680, 119408, 119679, 119994]);
    expect(sockets[1]).toEqual({
      localAddress: '0100007F',
      localPort: 5432,
      remoteAddress: '0100007F',
      remotePort: 54520,
      inode: 119680,
    });
  });

  it('reads IPv6 addresses whole', () => {
    expect(parseTcpTable(TCP6)).toEqual([
      {
        localAddress: '00000000000000000000000001000000',
        localPort: 6379,
        remoteAddress: '0'.repeat(32),
        remotePort: 0,
        inode: 4835,
      },
      {
        localAddress: '00000000000000000000000001000000',
        localPort: 4369,
        remoteAddress: '0'.repeat(32),
        remotePort: 0,
        inode: 6514,
      },
    ]);
  });
});

describe('descriptor links', () => {
  it('gives the inode of a socket and nothing for pipes, files and anonymous inodes', () => {
    expect(inodes(CLIENT_FDS)).toEqual([119679]);
    expect(inodes(BACKEND_FDS)).toEqual([119680]);
    expect(socketInode('anon_inode:[eventpoll]')).toBeUndefined();
  });
});

describe('backends serving a process tree', () => {
  const sockets = parseTcpTable(TCP);
  const backends = [
    { pid: 26413, inodes: inodes(BACKEND_FDS) },
    { pid: 26340, inodes: [119408] },
    { pid: 2253, inodes: [5243] }, // the postmaster, holding the listener
  ];

  it('are the backends holding the server end of the client’s connections, and no other', () => {
    expect(matchBackends(sockets, inodes(CLIENT_FDS), backends, 5432)).toEqual(new Set([26413]));
    expect(matchBackends(sockets, [119994], backends, 5432)).toEqual(new Set([26340]));
  });

  it('are none for a client with no connection to that port', () => {
    expect(matchBackends(sockets, inodes(CLIENT_FDS), backends, 3306)).toEqual(new Set());
    expect(matchBackends(sockets, [], backends, 5432)).toEqual(new Set());
  });
});

describe('PostgreSQL processes', () => {
  it('tells a client backend from the postmaster and the background processes', () => {
    expect(isClientBackend('postgres: 15/main: postgres test 127.0.0.1(54520) SELECT')).toBe(true);
    expect(isClientBackend('postgres: postgres test [local] idle')).toBe(true);
    expect(isClientBackend('postgres: 15/main: walwriter')).toBe(false);
    expect(isClientBackend('postgres: 15/main: autovacuum worker test')).toBe(false);
    expect(
      isClientBackend('/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main -c config_file=/etc/x.conf'),
    ).toBe(false);
  });
});
