import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

describe('tRPC batch and long-poll limits', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      logger: collectingLogger(),
      limits: { maxTrpcBatchSize: 2, maxLongPollMs: 300 },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('refuses an HTTP batch of more tRPC calls than maxTrpcBatchSize, and serves one within it', async () => {
    const call = (size: number) =>
      fetch(`${server.url}/trpc/${Array.from({ length: size }, () => 'schemas.list').join(',')}?batch=1`, {
        method: 'GET',
      });
    const within = await call(2);
    expect(within.status).toBe(200);
    const over = await call(3);
    expect(over.status).toBe(400);
    // The body is superjson-encoded, as every tRPC response of this server.
    const body = (await over.json()) as { error: { json: { message: string; data: { workqCode: string } } } };
    expect(body.error.json.data.workqCode).toBe('VALIDATION');
    expect(body.error.json.message).toMatch(/batch/i);
  });

  it('caps how long a claim waits at maxLongPollMs, whatever the client asks', async () => {
    // Registers the catalog, so the claim names a known job.
    await createClient({ url: server.url, jobs }).enqueue.sendEmail(
      { to: 'a@example.com', subject: 'x', body: '' },
      { delayMs: 60_000 },
    );
    const started = Date.now();
    const claimed = await rawClient(server.url).consumer.claim.mutate({
      name: 'sendEmail',
      maxVersion: 1,
      limit: 1,
      workerId: 'limits-test',
      waitMs: 20_000,
    });
    const waitedMs = Date.now() - started;
    expect(claimed.jobs).toEqual([]);
    expect(waitedMs).toBeGreaterThanOrEqual(250);
    expect(waitedMs).toBeLessThan(5_000);
  });
});
