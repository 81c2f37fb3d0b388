import { join } from 'node:path';
import { catalogJsonSchemas } from '@workq/core';
import { jobs } from '@workq/schemas';
import { freePort, freshPostgresSchema, until } from '@workq/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildProcesses, REPO_ROOT, RUN_TYPESCRIPT } from '../support/processes.ts';
import { scrapedMetric } from '../support/prometheus.ts';
import { rawClient } from '../support/raw-client.ts';

/**
 * Store calls made for requests take turns by caller once `limits.maxStoreCallsInFlight` run
 * (apps/queue-server/src/store-turns.ts): one token's flood of reads waits behind its own calls, not in front of
 * every other caller's. The server runs in a process of its own on PostgreSQL, so the flood queues as it would in
 * production, behind the store's connections rather than behind this test's own event loop.
 */
const ROOT = 'root-token-store-turns-0123';
const READER = 'read-token-store-turns-0123';
const PRODUCER = 'produce-token-store-turns-0123';
const CLI = join(REPO_ROOT, 'apps', 'queue-server', 'src', 'cli.ts');
const CALLS_PER_REQUEST = 50;
const REQUESTS = 100;

describe('store calls taking turns by caller (limits.maxStoreCallsInFlight)', () => {
  const children = new ChildProcesses();
  const schema = freshPostgresSchema('store_turns');
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const tokens = [`${ROOT}=admin`, `${READER}=produce:imageConvert`, `${PRODUCER}=produce:sendEmail`];
    const server = children.spawnNode([
      ...RUN_TYPESCRIPT,
      CLI,
      '--store',
      schema.url,
      '--port',
      String(port),
      ...tokens.flatMap((token) => ['--token', token]),
    ]);
    await until(async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200, 60_000, 100).catch(
      () => {
        throw new Error(`the server did not start: ${server.output().slice(-2_000)}`);
      },
    );
    await rawClient(url, ROOT).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  }, 90_000);

  afterAll(async () => {
    await children.killAll();
    await schema.drop();
  });

  it("answers another caller's enqueue while one token's 5,000 reads of a large job wait their turns", async () => {
    const { id } = await rawClient(url, READER).jobs.enqueue.mutate({
      name: 'imageConvert',
      version: 2,
      payload: { source: 'x'.repeat(100_000), output: 'o' },
    });
    const batch = Object.fromEntries(Array.from({ length: CALLS_PER_REQUEST }, (_, i) => [i, { json: { id } }]));
    const path = `/trpc/${Array.from({ length: CALLS_PER_REQUEST }, () => 'jobs.get').join(',')}`;
    const query = `?batch=1&input=${encodeURIComponent(JSON.stringify(batch))}`;
    let readsAnswered = 0;
    const reads = Array.from({ length: REQUESTS }, () =>
      fetch(`${url}${path}${query}`, { headers: { authorization: `Bearer ${READER}` } }).then(async (response) => {
        await response.arrayBuffer();
        readsAnswered++;
        return response.status;
      }),
    );
    const waitingCalls = () => scrapedMetric(url, ROOT, 'workq_store_calls{status="waiting"}');
    // Once a fifth of the reads are answered, the rest wait: for the store, or their turns.
    await until(() => readsAnswered >= REQUESTS / 5, 60_000, 5);
    const answeredBefore = readsAnswered;
    const enqueued = await rawClient(url, PRODUCER).jobs.enqueue.mutate({
      name: 'sendEmail',
      version: 1,
      payload: { to: 'a@example.com', subject: 'while the reads wait', body: '' },
    });
    expect(enqueued.id).toEqual(expect.any(String));
    // Its store calls each waited for one of the reader's at most, not for every read queued before them
    // (without turns, 77 of the 100 requests were answered meanwhile, and it took 4.4 s).
    expect(readsAnswered - answeredBefore).toBeLessThan(REQUESTS / 10);

    expect(await Promise.all(reads)).toEqual(Array.from({ length: REQUESTS }, () => 200));
    await until(async () => (await waitingCalls()) === 0, 10_000, 20);
  }, 120_000);
});
