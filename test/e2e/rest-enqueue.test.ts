import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

/**
 * A plain HTTP enqueue (`POST /v1/jobs/<name>`) is checked and counted as a
 * tRPC one is: it reaches a waiting consumer and is counted in
 * `workq_jobs_enqueued_total`; a repeat of its idempotency key is not counted.
 */
let server: QueueServer;

beforeAll(async () => {
  server = await startServer({ store: 'pglite://memory', port: 0, logger: collectingLogger(), jobs });
});

afterAll(async () => {
  await server?.close();
});

/** The value of one sample of `/metrics`, by its name and exact labels; 0 when absent. */
async function sample(name: string, labels: string): Promise<number> {
  const body = await (await fetch(`${server.url}/metrics`)).text();
  const line = body.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const enqueueOverHttp = () =>
  fetch(`${server.url}/v1/jobs/sendEmail`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      version: 1,
      payload: { to: 'ops@example.com', subject: 'rest', body: '' },
      options: { idempotencyKey: 'rest-1' },
    }),
  });

it('gives a plain HTTP enqueue to a waiting consumer and counts it as enqueued, once', async () => {
  const waiting = rawClient(server.url).consumer.claim.mutate({
    name: 'sendEmail',
    maxVersion: 1,
    limit: 1,
    workerId: 'w',
    waitMs: 10_000,
  });
  const response = await enqueueOverHttp();
  expect(response.status).toBe(201);
  const { id } = (await response.json()) as { id: string };
  expect((await waiting).jobs.map((job) => job.id)).toEqual([id]);
  expect(await sample('workq_jobs_enqueued_total', 'name="sendEmail"')).toBe(1);

  const repeat = await enqueueOverHttp();
  expect(repeat.status).toBe(200);
  expect(await sample('workq_jobs_enqueued_total', 'name="sendEmail"')).toBe(1);
});
