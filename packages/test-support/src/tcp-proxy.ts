import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP relay to a real server that a test can cut and restore, to stand for an outage or a dropped link. */
export interface TcpProxy {
  port: number;
  /** Drops every open connection and refuses new ones (each is accepted, then closed at once). */
  cut(): void;
  /** Relays new connections again. */
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let relaying = true;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server: Server = createServer((client) => {
    track(client);
    if (!relaying) {
      client.destroy();
      return;
    }
    const upstream = connect(port, host);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    cut() {
      relaying = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      relaying = true;
    },
    async close() {
      relaying = false;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
