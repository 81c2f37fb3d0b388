import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

/**
 * A plain HTTP enqueue (`POST /v1/jobs/<name>`) takes the path of a tRPC
 * one: it is handed to a consumer waiting on the server, by its own insert,
 * and counted in `workq_jobs_enqueued_total`; a repeat of its idempotency
 * key is not counted.
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

const claimQueries = () => sample('workq_claim_queries_total', 'name="sendEmail",query="ran"');
const enqueued = () => sample('workq_jobs_enqueued_total', 'name="sendEmail"');

/** A claim of one `sendEmail` job that waits for work, over tRPC without the SDK. */
const claim = (waitMs: number) =>
  rawClient(server.url).consumer.claim.mutate({ name: 'sendEmail', maxVersion: 1, limit: 1, workerId: 'w', waitMs });

/** A plain HTTP enqueue of one `sendEmail` job, with `options` as JSON carries them. */
const enqueueOverHttp = (options?: Record<string, unknown>) =>
  fetch(`${server.url}/v1/jobs/sendEmail`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ version: 1, payload: { to: 'ops@example.com', subject: 'rest', body: '' }, options }),
  });

it('hands a plain HTTP enqueue to a waiting consumer and counts it as enqueued', async () => {
  // A first claim finds nothing: the type's consumers are known to wait for work, so an enqueue that meets the next
  // claim's query waits for it to park rather than insert behind its back (the handoff does not hang on timing).
  expect((await claim(0)).jobs).toEqual([]);
  const waiting = claim(10_000);
  while ((await claimQueries()) < 2) await new Promise((resolve) => setTimeout(resolve, 10));

  const response = await enqueueOverHttp();
  expect(response.status).toBe(201);
  const { id } = (await response.json()) as { id: string };

  expect((await waiting).jobs.map((job) => job.id)).toEqual([id]);
  expect(await sample('workq_jobs_handed_over_total', 'name="sendEmail"')).toBe(1);
  expect(await enqueued()).toBe(1);
});

it("counts a repeat of a plain HTTP enqueue's idempotency key once", async () => {
  const first = await enqueueOverHttp({ idempotencyKey: 'rest-1' });
  expect(first.status).toBe(201);
  expect(await enqueued()).toBe(2);
  const repeat = await enqueueOverHttp({ idempotencyKey: 'rest-1' });
  expect(repeat.status).toBe(200);
  expect(await enqueued()).toBe(2);
});

it('schedules a plain HTTP enqueue at options.runAt, an RFC 3339 date-time as JSON carries it', async () => {
  const runAt = new Date(Date.now() + 3_600_000);
  const response = await enqueueOverHttp({ runAt: runAt.toISOString() });
  expect(response.status).toBe(201);
  const { id } = (await response.json()) as { id: string };
  const status = await (await fetch(`${server.url}/v1/job/${id}`)).json();
  expect(status).toMatchObject({ state: 'scheduled', runAt: runAt.toISOString() });

  const refused = await enqueueOverHttp({ runAt: 'tomorrow' });
  expect(refused.status).toBe(400);
  const { error } = (await refused.json()) as { error: { code: string; message: string } };
  expect(error.code).toBe('VALIDATION');
  expect(error.message).toContain('runAt');
});

it('refuses an option or a field it does not know, naming it, and stores nothing: a typo is never dropped', async () => {
  const before = await enqueued();
  const stored = async () =>
    (await rawClient(server.url).admin.jobs.query({ name: 'sendEmail', limit: 100 })).jobs.length;
  const storedBefore = await stored();
  const refusedWith = async (response: Response) => {
    expect(response.status).toBe(400);
    return ((await response.json()) as { error: { code: string; message: string } }).error;
  };
  // `delay` for `delayMs`: dropped, the job would run at once.
  expect(await refusedWith(await enqueueOverHttp({ delay: 60_000 }))).toMatchObject({
    code: 'VALIDATION',
    message: expect.stringMatching(/options.*delay/),
  });
  expect(
    await refusedWith(await enqueueOverHttp({ backoff: { type: 'fixed', delayMs: 10, jitter: 0.5 } })),
  ).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('jitter') });
  const misnamed = await fetch(`${server.url}/v1/jobs/sendEmail`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      version: 1,
      payload: { to: 'ops@example.com', subject: 'rest', body: '' },
      option: { delayMs: 60_000 },
    }),
  });
  expect(await refusedWith(misnamed)).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('option') });
  expect(await enqueued()).toBe(before);
  expect(await stored()).toBe(storedBefore);
});
