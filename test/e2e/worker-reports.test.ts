import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient, isWorkqError, type Worker } from '@workq/sdk';
import { type FreshPostgresSchema, freePort, freshPostgresSchema, until } from '@workq/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

/**
 * What a person running a worker sees when something is wrong: its console (or logger) output, its
 * `closed` promise, and the errors a producer's `handle.result()` rejects with. One PostgreSQL schema; the
 * stores' side of the error records is proven on every store by the conformance suite.
 */

const fast = { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 } } as const;
const catalog = defineCatalog({
  convert: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    result: z.object({ bytes: z.number() }),
    defaults: fast,
  }),
  measure: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    result: z.object({ bytes: z.number() }),
    defaults: { maxAttempts: 5 },
  }),
  archive: defineJob({ version: 1, payload: z.object({ n: z.number() }) }),
});
/** A job type the server's catalog does not have, so its schema is not deployed. */
const undeployed = defineCatalog({ reindex: defineJob({ version: 1, payload: z.object({ n: z.number() }) }) });

const FULL = 'full-scopes-token-0123456789';
const CONSUME_ONLY = 'consume-only-token-0123456789';
const TOKENS = [
  { token: FULL, scopes: ['produce:*', 'consume:*', 'admin'] },
  { token: CONSUME_ONLY, scopes: ['consume:*'] },
];

let schema: FreshPostgresSchema;
let port: number;
let server: QueueServer | undefined;
const workers: Worker[] = [];

/** A worker whose `closed` rejection is the test's to read, closed after the test either way. */
function track(worker: Worker): Worker {
  worker.closed.catch(() => undefined);
  workers.push(worker);
  return worker;
}

beforeAll(async () => {
  schema = await freshPostgresSchema('workq_e2e');
  port = await freePort();
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.close()));
  vi.restoreAllMocks();
});

afterAll(async () => {
  await server?.close();
  await schema?.drop();
});

describe('a worker says what is wrong', () => {
  it('server down: the console says so once, with the URL and what to check, and again once it is back', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const info = vi.spyOn(console, 'info').mockImplementation(() => undefined);
    const url = `http://127.0.0.1:${port}`;
    const sdk = createClient({ url, jobs: catalog, token: FULL });
    track(sdk.consume('convert', async () => ({ bytes: 1 }), { pollWaitMs: 500 }));
    await until(() => warn.mock.calls.length > 0, 5_000, 10);
    // Retries go on (100 ms doubling): several failed in this time, and none is printed again.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(warn.mock.calls).toHaveLength(1);
    const [line] = warn.mock.calls[0] as [string];
    expect(line).toMatch(/^workq warn: The worker for "convert" cannot reach the queue server: nothing answers at /);
    expect(line).toContain(`${url} (ECONNREFUSED): is the queue server running, and on that host and port?`);

    server = await startServer({
      store: schema.url,
      port,
      host: '127.0.0.1',
      jobs: catalog,
      tokens: TOKENS,
      logger: collectingLogger(),
    });
    await until(() => info.mock.calls.length > 0, 10_000, 20);
    expect(info.mock.calls[0]?.[0]).toMatch(
      /^workq info: The worker for "convert" reached the queue server again, after \d+\.\d s\. url=http:\/\/127\.0\.0\.1:\d+$/,
    );
    expect(warn.mock.calls).toHaveLength(1);
  });

  it('wrong URL (https to a plain-http server): said once, naming TLS', async () => {
    const logger = collectingLogger();
    const sdk = createClient({ url: `https://127.0.0.1:${port}`, jobs: catalog, token: FULL, logger });
    track(sdk.consume('convert', async () => ({ bytes: 1 })));
    await until(() => logger.lines.length > 0, 5_000, 10);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]).toMatchObject({ level: 'warn', fields: { url: `https://127.0.0.1:${port}` } });
    expect(logger.lines[0]?.message).toMatch(
      /TLS failed \(\w+\): is https:\/\/127\.0\.0\.1:\d+ an https URL to a plain-http server/,
    );
  });

  it('bad token: the worker stops with UNAUTHORIZED; a token function is asked once more first', async () => {
    const logger = collectingLogger();
    const fixed = createClient({ url: server!.url, jobs: catalog, token: 'wrong-token-0123456789abc', logger });
    const worker = track(fixed.consume('convert', async () => ({ bytes: 1 })));
    const stopped = await worker.closed.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isWorkqError(stopped, 'UNAUTHORIZED')).toBe(true);
    expect((stopped as Error).message).toMatch(
      /^The worker for "convert" stopped: .*Check the token given to createClient/,
    );
    expect(logger.lines).toEqual([expect.objectContaining({ level: 'error', message: (stopped as Error).message })]);

    let asked = 0;
    const refreshLog = collectingLogger();
    const refreshing = createClient({
      url: server!.url,
      jobs: catalog,
      token: () => `stale-${++asked}`,
      logger: refreshLog,
    });
    const second = track(refreshing.consume('convert', async () => ({ bytes: 1 })));
    await expect(second.closed).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    expect(asked).toBe(2);
    expect(refreshLog.lines.map(({ level, message }) => `${level}: ${message}`)).toEqual([
      'info: The worker for "convert" had its token refused; it asks the token function for a fresh one.',
      expect.stringMatching(/^error: The worker for "convert" stopped: /),
    ]);
  });

  it('a consume-only worker whose catalog is not deployed stops with FORBIDDEN naming the missing scope', async () => {
    const logger = collectingLogger();
    const sdk = createClient({ url: server!.url, jobs: undeployed, token: CONSUME_ONLY, logger });
    const worker = track(sdk.consume('reindex', async () => undefined));
    const stopped = await worker.closed.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(stopped).toMatchObject({ code: 'FORBIDDEN', details: { unregistered: [{ name: 'reindex', version: 1 }] } });
    expect((stopped as Error).message).toContain(
      'takes the scope "register:reindex" (or "register:*"), which this token lacks',
    );
    expect(logger.lines.map((line) => line.level)).toEqual(['error']);
  });

  it('a handler that throws: each attempt logged with job id, attempt and error; the dead job keeps both errors with class and stack; result() rejects JOB_FAILED', async () => {
    const logger = collectingLogger();
    const sdk = createClient({ url: server!.url, jobs: catalog, token: FULL, logger });
    track(
      sdk.consume('convert', async (job) => {
        if (job.attempt === 1) throw new TypeError('no size');
        throw new Error('still broken');
      }),
    );
    const handle = await sdk.enqueue.convert({ n: 1 });
    const failure = await handle.result({ timeoutMs: 10_000 }).catch((error: unknown) => error);
    expect(failure).toMatchObject({
      code: 'JOB_FAILED',
      message: `Job ${handle.id} (convert) is dead after 2 attempt(s): Error: still broken`,
      details: { state: 'dead', error: { name: 'Error', message: 'still broken', attempt: 2 } },
    });

    await until(() => logger.lines.length === 2, 5_000, 10);
    expect(logger.lines.map(({ level, message }) => ({ level, message }))).toEqual([
      {
        level: 'warn',
        message: expect.stringMatching(
          new RegExp(
            `^Job ${handle.id} \\("convert"\\) failed on attempt 1 of 2: TypeError: no size — it runs again at \\d{4}-`,
          ),
        ),
      },
      {
        level: 'error',
        message: `Job ${handle.id} ("convert") failed on attempt 2 of 2: Error: still broken — the job is dead, not retried.`,
      },
    ]);
    expect(logger.lines[0]?.fields).toMatchObject({
      jobId: handle.id,
      name: 'convert',
      attempt: 1,
      error: expect.any(TypeError),
    });

    const status = await handle.status();
    expect(status.errors).toMatchObject([
      { attempt: 1, name: 'TypeError', message: 'no size' },
      { attempt: 2, name: 'Error', message: 'still broken' },
    ]);
    for (const error of status.errors ?? []) {
      // The handler's own stack, from this file; never the server's.
      expect(error.stack).toMatch(/worker-reports\.test\.ts/);
      expect(error.stack).not.toMatch(/queue-server/);
    }
    // The dashboard's read of one job (admin.job) carries them too.
    expect((await rawClient(server!.url, FULL).admin.job.query({ id: handle.id })).errors).toEqual(status.errors);
  });

  it('a result of the wrong shape is a permanent failure, with the field path, not retried', async () => {
    const logger = collectingLogger();
    const sdk = createClient({ url: server!.url, jobs: catalog, token: FULL, logger });
    let runs = 0;
    track(
      sdk.consume('measure', async () => {
        runs += 1;
        return { bytes: 'many' } as unknown as { bytes: number };
      }),
    );
    const handle = await sdk.enqueue.measure({ n: 1 });
    const failure = await handle.result({ timeoutMs: 10_000 }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'JOB_FAILED', details: { error: { permanent: true, attempt: 1 } } });
    expect((failure as Error).message).toMatch(
      /after a permanent failure: WorkqError: Result of "measure" is invalid:\n.*→ at bytes/s,
    );
    expect(runs).toBe(1);
    expect(logger.lines).toMatchObject([
      { level: 'error', message: expect.stringContaining('the job is dead, not retried') },
    ]);
  });

  it('result() that times out while no worker reads the type says so', async () => {
    const sdk = createClient({ url: server!.url, jobs: catalog, token: FULL });
    const handle = await sdk.enqueue.archive({ n: 1 });
    const failure = await handle.result({ timeoutMs: 300 }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'TIMEOUT', details: { state: 'ready', workersReading: 0 } });
    expect((failure as Error).message).toBe(
      `Job ${handle.id} (archive) did not finish within 300 ms; it is ready. No worker is consuming "archive" v1: start one (sdk.consume('archive', handler), its catalog reading v1), and the job runs.`,
    );
  });
});
