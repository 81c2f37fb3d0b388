import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient } from '../support/raw-client.ts';
import { freshPostgresStore, POSTGRES_URL } from '../support/stores.ts';

/**
 * A consumer's claim carries its previous jobs' acks. When the claim finds
 * nothing, it must be ready for a handoff at once, not only after those acks
 * have committed: a job enqueued meanwhile is leased to it by its insert.
 */
const target = freshPostgresStore();
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
function claim(input: { waitMs?: number; complete?: { id: string; leaseToken: string; result: null }[] } = {}) {
  return rawClient(server.url).consumer.claim.mutate({
    name: 'sendEmail',
    maxVersion: 1,
    limit: 1,
    workerId: 'w',
    ...input,
  });
}

/**
 * Polls `pg_stat_activity` until a statement on the store's schema waits for a row lock. Each poll is its
 * own transaction: within one, PostgreSQL shows the same snapshot of that view every time.
 */
async function untilAnUpdateWaitsForALock(observer: pg.Client): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const { rows } = await observer.query(
      `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
      [`%"${target.schema}".%`],
    );
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the ack never waited for the row lock');
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
    await untilAnUpdateWaitsForALock(observer);
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
