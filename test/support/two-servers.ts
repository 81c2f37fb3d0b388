import { type QueueServer, type ServerOptions, startServer } from '@workq/queue-server';
import type { Worker } from '@workq/sdk';
import { afterAll, beforeAll } from 'vitest';
import { collectingLogger } from './quiet-logger.ts';
import { type FreshStore, serverStore } from './stores.ts';

/** Two queue servers on one fresh store, for the suite that calls it; each worker pushed is closed after it. */
export interface TwoServers {
  /** Server A: valid from the suite's `beforeAll` on. */
  readonly a: QueueServer;
  readonly b: QueueServer;
  /** Workers the suite started: closed before the servers. */
  readonly workers: Worker[];
}

/**
 * Registers the suite's `beforeAll` (a fresh store from `open`, two servers on it with `options`) and
 * `afterAll` (workers, servers, store), and returns what they start.
 */
export function twoServersOnOneStore(
  open: () => Promise<FreshStore>,
  options: Omit<ServerOptions, 'store' | 'port'> = {},
): TwoServers {
  let target: FreshStore | undefined;
  const servers: QueueServer[] = [];
  const workers: Worker[] = [];
  beforeAll(async () => {
    target = await open();
    const settings = { logger: collectingLogger(), ...options, port: 0 };
    servers.push(await startServer({ ...settings, store: await serverStore(target) }));
    servers.push(await startServer({ ...settings, store: await serverStore(target) }));
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.close()));
    for (const server of servers.splice(0)) await server.close();
    await target?.drop();
  });
  return {
    get a() {
      return servers[0] as QueueServer;
    },
    get b() {
      return servers[1] as QueueServer;
    },
    workers,
  };
}
