import { join } from 'node:path';
import { openStore, type Store } from '@workq/core/engine';
import { mintToken, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { freePort, until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildProcesses, exited, REPO_ROOT } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawHttp } from '../support/raw-http.ts';

const SECRET = 'process-guard-e2e-secret-0123456789abcdef';
const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

/** `store`, except that each `getJob` also rejects a promise nobody awaits: a bug in a request's async work. */
function withStrayRejections(store: Store): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== 'getJob') return value.bind(target);
      return (...args: unknown[]) => {
        void Promise.reject(new Error('a stray rejection from getJob'));
        return value.apply(target, args);
      };
    },
  });
}

describe('the process guard', () => {
  const logger = collectingLogger();
  let server: QueueServer;
  let token: string;
  /** The test runner's own listeners, set aside so that only the guard sees the rejections, then put back. */
  let runnerListeners: NodeJS.UnhandledRejectionListener[] = [];

  beforeAll(async () => {
    runnerListeners = process.listeners('unhandledRejection');
    process.removeAllListeners('unhandledRejection');
    const store = withStrayRejections(await openStore('pglite://memory'));
    server = await startServer({ store, port: 0, jobs, tokenSecret: SECRET, logger });
    token = await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 600_000, subject: 'ops-alice' });
  });

  afterAll(async () => {
    await server?.close();
    process.removeAllListeners('unhandledRejection');
    for (const listener of runnerListeners) process.on('unhandledRejection', listener);
  });

  it('logs a rejection nobody awaited with the request it came from, and keeps serving', async () => {
    const sdk = createClient({ url: server.url, jobs, token });
    const handle = await sdk.enqueue.sendEmail(email);
    const input = encodeURIComponent(JSON.stringify({ json: { id: handle.id } }));
    const answer = await rawHttp(server.url, {
      path: `/trpc/jobs.get?input=${input}`,
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'guard-e2e-1' },
    });
    expect(answer.status).toBe(200);
    await until(() => logger.lines.some((line) => line.message.startsWith('unhandled rejection')), 5_000, 10);
    const line = logger.lines.find((entry) => entry.message.startsWith('unhandled rejection'));
    expect(line).toMatchObject({
      level: 'error',
      fields: {
        requestId: 'guard-e2e-1',
        method: 'GET',
        path: '/trpc/jobs.get',
        subject: 'ops-alice',
        error: expect.stringContaining('a stray rejection from getJob'),
      },
    });
    // The same server answers the next requests, a valid enqueue among them.
    const next = await sdk.enqueue.sendEmail(email);
    expect((await next.status()).state).toMatch(/ready|active|scheduled/);
  });

  it('is installed once however many servers run, and removed when the last one closes', async () => {
    expect(process.listenerCount('unhandledRejection')).toBe(1);
    const second = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger() });
    expect(process.listenerCount('unhandledRejection')).toBe(1);
    await second.close();
    expect(process.listenerCount('unhandledRejection')).toBe(1);
    const third = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger() });
    await third.close();
    await server.close();
    expect(process.listenerCount('unhandledRejection')).toBe(0);
  });
});

describe('the workq-server command', () => {
  const children = new ChildProcesses();

  afterAll(async () => {
    await children.killAll();
  });

  it('survives a stray rejection in its request work, logs it, and goes on serving', async () => {
    const port = await freePort();
    const bin = join(REPO_ROOT, 'apps', 'queue-server', 'bin', 'workq-server.js');
    const fixture = join(REPO_ROOT, 'test', 'fixtures', 'stray-rejection.mjs');
    const server = children.spawnNode([bin, '--store', 'pglite://memory', '--port', String(port)], {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${fixture}`.trim(),
    });
    const url = `http://127.0.0.1:${port}`;
    const healthy = () =>
      fetch(`${url}/healthz`).then(
        (response) => response.status === 200,
        () => false,
      );
    await until(healthy, 60_000, 100);
    const hit = await fetch(`${url}/trpc/admin.queues`, { headers: { 'x-stray-rejection': '1' } });
    expect(hit.status).toBe(200);
    await until(() => server.output().includes('unhandled rejection'), 10_000, 50);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(server.exitCode).toBeNull();
    expect(await healthy()).toBe(true);
    expect((await fetch(`${url}/trpc/admin.queues`)).status).toBe(200);
    children.signal(server, 'SIGTERM');
    expect(await exited(server)).toEqual({ code: 0, signal: null });
  }, 90_000);
});
