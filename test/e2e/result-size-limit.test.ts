import { defineCatalog, defineJob } from '@workq/core';
import { createClient, isWorkqError } from '@workq/sdk';
import { until } from '@workq/test-support';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { oneServerOnStore } from '../support/one-server.ts';
import { rawClient, rawFailure } from '../support/raw-client.ts';
import { describeEachStore, IN_PROCESS_STORES } from '../support/stores.ts';

const MAX_RESULT_BYTES = 2_048;

const catalog = defineCatalog({
  summarize: defineJob({
    version: 1,
    payload: z.object({ size: z.number().int() }),
    result: z.object({ text: z.string() }),
    defaults: { maxAttempts: 5, backoff: { type: 'fixed', delayMs: 10 } },
  }),
});

await describeEachStore(IN_PROCESS_STORES, 'a result over maxResultBytes on $label', ({ open }) => {
  const server = oneServerOnStore(open, { jobs: catalog, limits: { maxResultBytes: MAX_RESULT_BYTES } });

  it('ends the job dead with an error naming the limit, runs it once, stores no result, and tells the worker PAYLOAD_TOO_LARGE', async () => {
    const sdk = createClient({ url: server.url, jobs: catalog });
    const errors: unknown[] = [];
    let runs = 0;
    const worker = sdk.consume(
      'summarize',
      async (job) => {
        runs += 1;
        return { text: 'x'.repeat(job.payload.size) };
      },
      { onError: (error) => errors.push(error) },
    );
    try {
      const small = await sdk.enqueue.summarize({ size: 100 });
      const large = await sdk.enqueue.summarize({ size: 10_000 });
      expect(await small.result({ timeoutMs: 20_000 })).toEqual({ text: 'x'.repeat(100) });
      await until(async () => (await large.status()).state === 'dead', 20_000, 20);
      const status = await large.status();
      expect(status).toMatchObject({ state: 'dead', attempts: 1 });
      expect(status.error?.message).toMatch(/over the server's limit of 2048 \(maxResultBytes\)/);
      expect(status.result).toBeUndefined();
      await until(() => errors.some((error) => isWorkqError(error, 'PAYLOAD_TOO_LARGE')), 10_000, 20);
      expect(String((errors.find((error) => isWorkqError(error, 'PAYLOAD_TOO_LARGE')) as Error).message)).toMatch(
        /limit is 2048 \(limits.maxResultBytes/,
      );
    } finally {
      await worker.close();
    }
    // One run for each job: the large one was not tried again.
    expect(runs).toBe(2);
  });

  it('refuses it on a plain complete too, leaving the job dead and resultless', async () => {
    const raw = rawClient(server.url);
    const sdk = createClient({ url: server.url, jobs: catalog });
    const handle = await sdk.enqueue.summarize({ size: 1 });
    const claimed = await raw.consumer.claim.mutate({
      name: 'summarize',
      maxVersion: 1,
      limit: 1,
      workerId: 'raw-worker',
    });
    const [job] = claimed.jobs;
    expect(job?.id).toBe(handle.id);
    const refused = await rawFailure(
      raw.consumer.complete.mutate({
        items: [{ id: handle.id, leaseToken: job?.leaseToken ?? '', result: { text: 'y'.repeat(50_000) } }],
      }),
    );
    expect(refused).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(await handle.status()).toMatchObject({ state: 'dead', attempts: 1 });
    expect((await handle.status()).result).toBeUndefined();
  });
});
