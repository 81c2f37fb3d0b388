import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

/**
 * A claim's answer carries every payload it leased, so the server cuts a claim's `limit` to what
 * `limits.maxClaimBytes` holds of payloads of `maxPayloadBytes`: an answer stays within it whatever the jobs
 * carry, and a worker claims again for its free slots.
 */
const MAX_PAYLOAD_BYTES = 64 * 1024;
const MAX_CLAIM_BYTES = 4 * MAX_PAYLOAD_BYTES;
/** An `imageConvert` payload of about `MAX_PAYLOAD_BYTES`. */
const largePayload = (n: number) => ({ source: `${n}:${'x'.repeat(MAX_PAYLOAD_BYTES - 200)}`, output: `${n}.webp` });

describe('a claim cut to limits.maxClaimBytes', () => {
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs,
      logger: collectingLogger(),
      limits: { maxPayloadBytes: MAX_PAYLOAD_BYTES, maxClaimBytes: MAX_CLAIM_BYTES },
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('leases at most maxClaimBytes / maxPayloadBytes jobs however many it asks for, its answer within the bound', async () => {
    const raw = rawClient(server.url);
    await raw.jobs.enqueueMany.mutate({
      name: 'imageConvert',
      version: 2,
      payloads: Array.from({ length: 10 }, (_, n) => largePayload(n)),
    });
    const response = await fetch(`${server.url}/trpc/consumer.claim`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ json: { name: 'imageConvert', maxVersion: 2, limit: 10, workerId: 'raw' } }),
    });
    const text = await response.text();
    expect(response.status).toBe(200);
    const answer = JSON.parse(text) as { result: { data: { json: { jobs: unknown[] } } } };
    expect(answer.result.data.json.jobs).toHaveLength(4);
    // Four payloads of nearly the largest size, and each job's few fields beside it.
    expect(text.length).toBeGreaterThan(MAX_CLAIM_BYTES - 4 * 1024);
    expect(text.length).toBeLessThan(MAX_CLAIM_BYTES + 4 * 1024);
    // The rest stay ready for the next claims, cut alike.
    const next = await raw.consumer.claim.mutate({ name: 'imageConvert', maxVersion: 2, limit: 10, workerId: 'raw' });
    expect(next.jobs).toHaveLength(4);
    const last = await raw.consumer.claim.mutate({ name: 'imageConvert', maxVersion: 2, limit: 10, workerId: 'raw' });
    expect(last.jobs).toHaveLength(2);
  });

  it('lets a worker with more slots than one claim holds run every job, claiming again for its free slots', async () => {
    const sdk = createClient({ url: server.url, jobs });
    const ran = new Set<string>();
    let running = 0;
    let mostAtOnce = 0;
    const worker = sdk.consume(
      'imageConvert',
      async (job) => {
        running++;
        mostAtOnce = Math.max(mostAtOnce, running);
        await new Promise((resolve) => setTimeout(resolve, 200));
        ran.add(job.payload.output);
        running--;
        return { bytes: job.payload.source.length };
      },
      { concurrency: 12 },
    );
    try {
      const handles = await sdk.enqueueMany.imageConvert(Array.from({ length: 12 }, (_, n) => largePayload(100 + n)));
      await Promise.all(handles.map((handle) => handle.result({ timeoutMs: 20_000 })));
      expect(ran.size).toBe(12);
      // Three claims of four, each made while the jobs of the one before ran.
      expect(mostAtOnce).toBeGreaterThan(4);
    } finally {
      await worker.close();
      await sdk.close();
    }
  });

  it('refuses a maxClaimBytes that cannot hold one largest payload, at start', async () => {
    await expect(
      startServer({
        store: 'pglite://memory',
        port: 0,
        jobs,
        logger: collectingLogger(),
        limits: { maxPayloadBytes: MAX_PAYLOAD_BYTES, maxClaimBytes: MAX_PAYLOAD_BYTES - 1 },
      }),
    ).rejects.toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('limits.maxClaimBytes') });
  });
});
