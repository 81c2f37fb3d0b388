import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { freshPostgresSchema, POSTGRES_URL } from '@workq/test-support';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';

/**
 * Handoffs to parked claims. A consumer's claim carries its previous jobs'
 * acks; when it finds nothing, it must be ready for a handoff at once, not
 * only after those acks have committed: a job enqueued meanwhile is leased to
 * it by its insert. And a job handed to a claim whose client has gone by the
 * time the handoff commits goes back to the queue, its attempt unspent.
 */
const target = freshPostgresSchema('workq_e2e');
let server: QueueServer;
let sdk: ReturnType<typeof createClient<typeof jobs>>;
const email = { to: 'ops@example.com', subject: 'handoff', body: '' };

beforeAll(async () => {
  server = await startServer({ store: target.url, port: 0, logger: collectingLogger() });
  sdk = createClient({ url: server.url, jobs });
});

afterAll(async () => {
  await server?.close();
  await target.drop();
});

/** A claim of one `sendEmail` job, over tRPC without the SDK, so the test decides which acks it carries. */
function claim(
  input: { waitMs?: number; complete?: { id: string; leaseToken: string; result: null }[] } = {},
  signal?: AbortSignal,
) {
  return rawClient(server.url).consumer.claim.mutate(
    { name: 'sendEmail', maxVersion: 1, limit: 1, workerId: 'w', ...input },
    { signal },
  );
}

/** Runs `during` while another transaction holds the jobs table against inserts; `observer` is free to query. */
async function withInsertsHeld(during: (observer: pg.Client) => Promise<void>): Promise<void> {
  const [admin, observer] = [new pg.Client(POSTGRES_URL), new pg.Client(POSTGRES_URL)];
  await Promise.all([admin.connect(), observer.connect()]);
  try {
    await admin.query('BEGIN');
    await admin.query(`LOCK TABLE "${target.schema}".jobs IN SHARE MODE`);
    await during(observer);
    await admin.query('ROLLBACK');
  } finally {
    await Promise.all([admin.end(), observer.end()]);
  }
}

/**
 * Polls `pg_stat_activity` until a statement on the store's schema waits for a lock. Each poll is its
 * own transaction: within one, PostgreSQL shows the same snapshot of that view every time.
 */
async function untilAStatementWaitsForALock(observer: pg.Client): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const { rows } = await observer.query(
      `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
      [`%"${target.schema}".%`],
    );
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('no statement waited for the lock');
}

it('hands a job to a claim that found nothing while the acks it carries are still committing', async () => {
  const first = await sdk.enqueue.sendEmail(email);
  const [held] = (await claim()).jobs;
  expect(held?.id).toBe(first.id);

  // Another transaction holds the first job's row, so the ack riding on the next claim cannot commit yet.
  const [admin, observer] = [new pg.Client(POSTGRES_URL), new pg.Client(POSTGRES_URL)];
  await Promise.all([admin.connect(), observer.connect()]);
  try {
    await admin.query('BEGIN');
    await admin.query(`SELECT 1 FROM "${target.schema}".jobs WHERE id = $1 FOR UPDATE`, [first.id]);
    const next = claim({
      waitMs: 10_000,
      complete: [{ id: first.id, leaseToken: held?.leaseToken as string, result: null }],
    });
    await untilAStatementWaitsForALock(observer);
    // The claim's own query (SKIP LOCKED) has found nothing by now, and it waits: parked for a handoff.
    await new Promise((resolve) => setTimeout(resolve, 200));

    const second = await sdk.enqueue.sendEmail({ ...email, subject: 'while acking' });
    expect((await second.status()).state).toBe('active');

    await admin.query('ROLLBACK');
    const answer = await next;
    expect(answer.jobs.map((job) => job.id)).toEqual([second.id]);
    expect(answer.completed).toEqual([first.id]);
  } finally {
    await Promise.all([admin.end(), observer.end()]);
  }
});

it('gives a job handed to a claim whose client went away back to the queue, its attempt unspent', async () => {
  const client = new AbortController();
  const parked = claim({ waitMs: 10_000 }, client.signal).catch((error: unknown) => error);
  // The claim finds nothing and parks.
  await new Promise((resolve) => setTimeout(resolve, 200));
  let enqueued: ReturnType<typeof sdk.enqueue.sendEmail> | undefined;
  await withInsertsHeld(async (observer) => {
    // The enqueue takes the parked claim, and its insert, which leases the job to it, waits for the lock.
    enqueued = sdk.enqueue.sendEmail({ ...email, subject: 'to nobody' });
    await untilAStatementWaitsForALock(observer);
    client.abort();
    await new Promise((resolve) => setTimeout(resolve, 200));
  });
  const job = await (enqueued as ReturnType<typeof sdk.enqueue.sendEmail>);
  expect(await parked).toBeInstanceOf(Error);
  await expect.poll(async () => (await job.status()).state, { timeout: 5_000 }).toBe('ready');
  expect(await job.status()).toMatchObject({ attempts: 0 });
  const [again] = (await claim()).jobs;
  expect(again).toMatchObject({ id: job.id, attempt: 1 });
});

it('answers a waiting claim at once when an ack it carries finds its lease lost', async () => {
  const job = await sdk.enqueue.sendEmail({ ...email, subject: 'lease lost' });
  const [held] = (await claim()).jobs;
  expect(held?.id).toBe(job.id);

  let started = Date.now();
  const lost = await claim({ waitMs: 10_000, complete: [{ id: job.id, leaseToken: 'not-its-lease', result: null }] });
  expect(lost).toMatchObject({ jobs: [], completed: [], acksFailed: false });
  expect(Date.now() - started).toBeLessThan(5_000);

  // An ack that completes its job leaves the claim to wait for work, as before.
  started = Date.now();
  const leaseToken = held?.leaseToken as string;
  const done = await claim({ waitMs: 600, complete: [{ id: job.id, leaseToken, result: null }] });
  expect(done).toMatchObject({ jobs: [], completed: [job.id] });
  expect(Date.now() - started).toBeGreaterThanOrEqual(500);
});
