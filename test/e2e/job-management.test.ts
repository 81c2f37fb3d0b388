import { jobs } from '@workq/schemas';
import { createClient, PermanentError, WorkqError } from '@workq/sdk';
import { beforeAll, expect, it } from 'vitest';
import { oneServerOnStore } from '../support/one-server.ts';
import { describeEachStore, IN_PROCESS_STORES } from '../support/stores.ts';

const ADMIN = 'job-management-e2e-admin';
const PRODUCER = 'job-management-e2e-producer';
const email = (subject: string) => ({ to: 'a@example.com', subject, body: 'hello' });
const HOUR_MS = 3_600_000;

async function rejection(promise: Promise<unknown>): Promise<WorkqError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkqError);
  return error as WorkqError;
}

await describeEachStore(IN_PROCESS_STORES, 'job management through the SDK over $label', ({ open }) => {
  const server = oneServerOnStore(open, {
    pollIntervalMs: 100,
    tokens: [
      { token: ADMIN, scopes: ['produce:*', 'consume:*', 'admin'] },
      { token: PRODUCER, scopes: ['produce:*'] },
    ],
  });
  const { workers } = server;
  let sdk: ReturnType<typeof createClient<typeof jobs>>;
  /** Subjects in the order a worker ran them, and how often each ran. */
  const runs: string[] = [];

  beforeAll(() => {
    sdk = createClient({ url: server.url, jobs, token: ADMIN, logger: false });
  });

  function work(): void {
    workers.push(
      sdk.consume('sendEmail', async (job) => {
        runs.push(job.payload.subject);
        // A job to die: permanently, on its first run only.
        if (job.payload.subject === 'dead' && runs.filter((s) => s === 'dead').length === 1) {
          throw new PermanentError('mailbox gone');
        }
        return { messageId: `${job.payload.subject}-${runs.filter((s) => s === job.payload.subject).length}` };
      }),
    );
  }

  it('retry reruns a completed job in place, and a dead one, each under its own id', async () => {
    work();
    const done = await sdk.enqueue.sendEmail(email('rerun'));
    await expect(done.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'rerun-1' });
    expect(await sdk.admin.retry(done.id)).toBe(true);
    await expect(done.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'rerun-2' });
    expect(await done.status()).toMatchObject({ id: done.id, state: 'completed', attempts: 1 });

    const dead = await sdk.enqueue.sendEmail(email('dead'));
    expect((await rejection(dead.result({ timeoutMs: 20_000 }))).code).toBe('JOB_FAILED');
    expect(await sdk.admin.retry(dead.id)).toBe(true);
    await expect(dead.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'dead-2' });
    // Done, and running no more: a cancelled job is not retried, it is restored or replayed.
    const cancelled = await sdk.enqueue.sendEmail(email('cancelled'), { delayMs: HOUR_MS });
    expect(await cancelled.cancel()).toBe(true);
    const conflict = await rejection(sdk.admin.retry(cancelled.id));
    expect([conflict.code, conflict.message]).toEqual(['CONFLICT', expect.stringContaining('admin.restore')]);
  });

  it('promote runs a job scheduled an hour ahead now', async () => {
    const later = await sdk.enqueue.sendEmail(email('promoted'), { delayMs: HOUR_MS });
    expect((await later.status()).state).toBe('scheduled');
    work();
    expect(await sdk.admin.promote(later.id)).toBe(true);
    await expect(later.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'promoted-1' });
    expect(await sdk.admin.promote(later.id)).toBe(false);
  });

  it('restore puts a cancelled job that never started back, and refuses one that had started', async () => {
    const scheduled = await sdk.enqueue.sendEmail(email('restored-later'), { delayMs: HOUR_MS });
    const ready = await sdk.enqueue.sendEmail(email('restored'));
    expect(await scheduled.cancel()).toBe(true);
    expect(await ready.cancel()).toBe(true);
    expect(await sdk.admin.restore(scheduled.id)).toBe(true);
    expect(await scheduled.status()).toMatchObject({ state: 'scheduled', attempts: 0 });
    expect(await sdk.admin.restore(ready.id)).toBe(true);
    work();
    await expect(ready.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'restored-1' });
    await expect(sdk.admin.restore(ready.id).catch((e: WorkqError) => e.code)).resolves.toBe('CONFLICT');
    await expect(sdk.admin.restore('01a23000-0000-7000-8000-000000000000').catch((e) => e.code)).resolves.toBe(
      'NOT_FOUND',
    );
  });

  it('removeByKey removes a waiting job and frees its key; a finished job stays', async () => {
    const key = { idempotencyKey: 'digest:user-7' };
    const waiting = await sdk.enqueue.sendEmail(email('removed'), { ...key, delayMs: HOUR_MS });
    expect(await sdk.admin.removeByKey('sendEmail', 'digest:user-7')).toBe(true);
    expect((await rejection(waiting.status())).code).toBe('NOT_FOUND');
    expect(await sdk.admin.removeByKey('sendEmail', 'digest:user-7')).toBe(false);

    work();
    const again = await sdk.enqueue.sendEmail(email('kept'), key);
    expect(again.created).toBe(true);
    await expect(again.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'kept-1' });
    expect(await sdk.admin.removeByKey('sendEmail', 'digest:user-7')).toBe(false);
    expect(await again.status()).toMatchObject({ state: 'completed' });
    expect((await rejection(sdk.admin.removeByKey('sendEmail', ''))).code).toBe('VALIDATION');
  });

  it('needs the admin scope: a produce-only token is FORBIDDEN and changes nothing', async () => {
    const producer = createClient({ url: server.url, jobs, token: PRODUCER, logger: false });
    const job = await producer.enqueue.sendEmail(email('forbidden'), { idempotencyKey: 'forbidden', delayMs: HOUR_MS });
    expect(await sdk.admin.cancel(job.id)).toBe(true);
    for (const call of [
      producer.admin.retry(job.id),
      producer.admin.restore(job.id),
      producer.admin.promote(job.id),
      producer.admin.removeByKey('sendEmail', 'forbidden'),
    ]) {
      expect((await rejection(call)).code).toBe('FORBIDDEN');
    }
    expect(await sdk.admin.job(job.id)).toMatchObject({ state: 'cancelled' });
  });
});
