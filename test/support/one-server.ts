import { type QueueServer, type ServerOptions, startServer } from '@workq/queue-server';
import type { Worker } from '@workq/sdk';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { collectingLogger } from './quiet-logger.ts';
import { type FreshStore, serverStore } from './stores.ts';

/** One queue server on a fresh store, for the suite that calls it. */
export interface OneServer {
  /** The server: valid from the suite's `beforeAll` on (hooks the suite registers after the call run after it). */
  readonly server: QueueServer;
  /** The server's URL. */
  readonly url: string;
  /** Workers a test started: closed after each test. */
  readonly workers: Worker[];
}

/**
 * Registers the suite's `beforeAll` (a fresh store from `open`, one server on it with `options`, a collecting
 * logger unless they name one), `afterEach` (the workers pushed) and `afterAll` (the server, then the store),
 * and returns what they start. The suite's own `afterAll` hooks, registered after the call, run before it.
 */
export function oneServerOnStore(
  open: () => Promise<FreshStore>,
  options: Omit<ServerOptions, 'store' | 'port'> = {},
): OneServer {
  let target: FreshStore | undefined;
  let server: QueueServer | undefined;
  const workers: Worker[] = [];
  beforeAll(async () => {
    target = await open();
    server = await startServer({ logger: collectingLogger(), ...options, port: 0, store: await serverStore(target) });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.close()));
  });
  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });
  return {
    get server() {
      return server as QueueServer;
    },
    get url() {
      return (server as QueueServer).url;
    },
    workers,
  };
}
