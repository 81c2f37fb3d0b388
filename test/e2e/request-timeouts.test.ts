import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jobs } from '@workq/schemas';
import { createClient, WorkqError } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const payload = { source: 'in/a.png', output: 'out/a.webp' };

/** Settles with what `promise` rejects with, or fails the test once `withinMs` pass without an outcome. */
async function failureOf(promise: Promise<unknown>, withinMs: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${withinMs} ms`)), withinMs);
  });
  try {
    await Promise.race([promise, stuck]);
    throw new Error('expected a failure');
  } catch (error) {
    if (error instanceof WorkqError) return error;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A server that takes requests but never answers them (a wedged process), except the catalog's registration,
 * so that an enqueue's own request is the one left unanswered.
 */
describe('requests to a server that accepts them but never answers', () => {
  let silent: Server;
  let url: string;

  beforeAll(async () => {
    silent = createServer((request, response) => {
      request.resume();
      if (request.url?.includes('schemas.register')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ result: { data: { json: null } } }));
      }
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    silent.closeAllConnections();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('fails an enqueue with TIMEOUT (retryable) within the time limit, saying the job may have been stored', async () => {
    const sdk = createClient({ url, jobs, timeoutMs: 300, enqueueRetries: 0 });
    const startedAtMs = Date.now();
    const error = await failureOf(sdk.enqueue.imageConvert(payload), 5_000);
    const elapsedMs = Date.now() - startedAtMs;
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect((error as Error).message).toMatch(/within 300 ms.*may have been stored/);
    expect(elapsedMs).toBeGreaterThanOrEqual(290);
    expect(elapsedMs).toBeLessThan(1_500);
  });

  it('retries an enqueue that timed out, all within the enqueue budget', async () => {
    const sdk = createClient({ url, jobs, timeoutMs: 200, enqueueRetries: 3, enqueueBudgetMs: 1_200 });
    const startedAtMs = Date.now();
    const error = await failureOf(sdk.enqueue.imageConvert(payload), 5_000);
    const elapsedMs = Date.now() - startedAtMs;
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true, details: { mayBeStored: true } });
    expect((error as WorkqError).details).toMatchObject({ attempts: expect.any(Number) });
    expect(((error as WorkqError).details as { attempts: number }).attempts).toBeGreaterThanOrEqual(2);
    expect(elapsedMs).toBeLessThan(1_200 + 300);
  });

  it('gives handle.result() its wait on top of the time limit, then fails with TIMEOUT', async () => {
    const sdk = createClient({ url, jobs, timeoutMs: 200 });
    const startedAtMs = Date.now();
    const error = await failureOf(sdk.job('imageConvert', 'no-such-job').result({ timeoutMs: 400 }), 5_000);
    const elapsedMs = Date.now() - startedAtMs;
    expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true, message: expect.stringContaining('600 ms') });
    expect(elapsedMs).toBeGreaterThanOrEqual(590);
    expect(elapsedMs).toBeLessThan(2_000);
  });

  it('fails other calls with TIMEOUT too', async () => {
    const sdk = createClient({ url, jobs, timeoutMs: 200 });
    await expect(failureOf(sdk.job('imageConvert', 'x').status(), 5_000)).resolves.toMatchObject({ code: 'TIMEOUT' });
    await expect(failureOf(sdk.job('imageConvert', 'x').cancel(), 5_000)).resolves.toMatchObject({ code: 'TIMEOUT' });
    await expect(failureOf(sdk.admin.stats(), 5_000)).resolves.toMatchObject({ code: 'TIMEOUT' });
  });
});
