import { jobs } from '@workq/schemas';
import { createClient, WorkqError } from '@workq/sdk';
import { beforeAll, expect, it } from 'vitest';
import { oneServerOnStore } from '../support/one-server.ts';
import { describeEachStore, IN_PROCESS_STORES } from '../support/stores.ts';

const email = (subject: string) => ({ to: 'a@example.com', subject, body: 'hello' });

await describeEachStore(IN_PROCESS_STORES, 'debounce and idempotency TTLs through the SDK over $label', ({ open }) => {
  const server = oneServerOnStore(open, { pollIntervalMs: 100 });
  const { workers } = server;
  let sdk: ReturnType<typeof createClient<typeof jobs>>;

  beforeAll(() => {
    sdk = createClient({ url: server.url, jobs });
  });

  it('debounced enqueues are one job, run once with the last payload, delayMs after the last of them', async () => {
    const debounce = { key: 'digest:user-1', delayMs: 800 };
    const first = await sdk.enqueue.sendEmail(email('one'), { debounce });
    const firstRunAt = (await first.status()).runAt.getTime();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await sdk.enqueue.sendEmail(email('two'), { debounce });
    const [third, fourth] = await sdk.enqueueMany.sendEmail([email('three'), email('four')], { debounce });
    expect(first.created).toBe(true);
    expect([second, third, fourth].map((handle) => [handle?.id, handle?.created])).toEqual([
      [first.id, false],
      [first.id, false],
      [first.id, false],
    ]);
    const status = await first.status();
    expect(status).toMatchObject({ state: 'scheduled', debounceKey: 'digest:user-1' });
    expect(status.runAt.getTime()).toBeGreaterThan(firstRunAt);

    const seen: string[] = [];
    workers.push(
      sdk.consume('sendEmail', async (job) => {
        seen.push(job.payload.subject);
        return { messageId: job.payload.subject };
      }),
    );
    await expect(first.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'four' });
    expect(Date.now()).toBeGreaterThanOrEqual(status.runAt.getTime());
    expect(seen).toEqual(['four']);

    // The job ran, so the next debounce of the key makes a new one.
    const next = await sdk.enqueue.sendEmail(email('five'), { debounce: { ...debounce, delayMs: 0 } });
    expect(next.created).toBe(true);
    expect(next.id).not.toBe(first.id);
    await expect(next.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'five' });
  });

  it('an idempotency key with a TTL returns its job within the TTL and makes a new one after it', async () => {
    const options = { idempotencyKey: 'report:acct-1', idempotencyTtlMs: 400 };
    const payload = { accountId: 'acct-1', kind: 'usage', from: '2026-01-01', to: '2026-01-31' } as const;
    const first = await sdk.enqueue.generateReport(payload, options);
    const again = await sdk.enqueue.generateReport(payload, options);
    expect([first.created, again.created, again.id]).toEqual([true, false, first.id]);
    expect((await first.status()).idempotencyExpiresAt).toBeInstanceOf(Date);

    await new Promise((resolve) => setTimeout(resolve, 500));
    const later = await sdk.enqueue.generateReport(payload, options);
    expect(later.created).toBe(true);
    expect(later.id).not.toBe(first.id);
    expect(await first.status()).toMatchObject({ state: 'ready' });
    expect((await first.status()).idempotencyKey).toBeUndefined();
    expect((await later.status()).idempotencyKey).toBe('report:acct-1');
  });

  it('a key held until finished returns its job while it waits or runs, and makes a new job once it completed or was cancelled', async () => {
    const options = { idempotencyKey: 'welcome:user-9', idempotencyUntil: 'finished' } as const;
    const first = await sdk.enqueue.sendEmail(email('one'), options);
    expect(await first.status()).toMatchObject({
      idempotencyKey: options.idempotencyKey,
      idempotencyUntil: 'finished',
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let start!: () => void;
    const started = new Promise<void>((resolve) => {
      start = resolve;
    });
    workers.push(
      sdk.consume('sendEmail', async (job) => {
        start();
        await held;
        return { messageId: job.payload.subject };
      }),
    );
    await started;
    const whileRunning = await sdk.enqueue.sendEmail(email('two'), options);
    expect([whileRunning.id, whileRunning.created]).toEqual([first.id, false]);
    release();
    await expect(first.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'one' });
    expect((await first.status()).idempotencyKey).toBeUndefined();

    const second = await sdk.enqueue.sendEmail(email('three'), { ...options, delayMs: 60_000 });
    expect(second.created).toBe(true);
    expect(second.id).not.toBe(first.id);
    expect(await second.cancel()).toBe(true);
    const third = await sdk.enqueue.sendEmail(email('four'), options);
    expect(third.created).toBe(true);
    expect(new Set([first.id, second.id, third.id]).size).toBe(3);
    await expect(third.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'four' });
  });

  it('debounce modes: preserveRunAt keeps the waiting job’s run time, keepFirst keeps the job as the first enqueue made it', async () => {
    const preserve = { key: 'digest:user-2', delayMs: 60_000 };
    const first = await sdk.enqueue.sendEmail(email('one'), { debounce: preserve });
    const runAt = (await first.status()).runAt;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = await sdk.enqueue.sendEmail(email('two'), { debounce: { ...preserve, mode: 'preserveRunAt' } });
    expect([second.id, second.created]).toEqual([first.id, false]);
    expect(await first.status()).toMatchObject({ runAt, state: 'scheduled' });
    await first.cancel();

    const keep = { key: 'digest:user-3', delayMs: 300, mode: 'keepFirst' } as const;
    const kept = await sdk.enqueue.sendEmail(email('first'), { debounce: keep });
    const { runAt: keptRunAt, priority } = await kept.status();
    const dropped = await sdk.enqueue.sendEmail(email('second'), { debounce: keep, priority: priority + 1 });
    expect([dropped.id, dropped.created]).toEqual([kept.id, false]);
    expect(await kept.status()).toMatchObject({ runAt: keptRunAt, priority });
    workers.push(sdk.consume('sendEmail', async (job) => ({ messageId: job.payload.subject })));
    await expect(kept.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'first' });
  });

  it('contradicting options are VALIDATION errors through the SDK, for one job and for a batch', async () => {
    const debounce = { key: 'k', delayMs: 10 };
    for (const enqueue of [
      () => sdk.enqueue.sendEmail(email('x'), { debounce, idempotencyKey: 'k' }),
      () => sdk.enqueue.sendEmail(email('x'), { debounce, delayMs: 5 }),
      () => sdk.enqueue.sendEmail(email('x'), { idempotencyTtlMs: 1000 }),
      () => sdk.enqueueMany.sendEmail([email('x')], { debounce, perJob: [{ idempotencyKey: 'own' }] }),
      () => sdk.enqueue.sendEmail(email('x'), { debounce: { key: '', delayMs: 10 } }),
      () => sdk.enqueue.sendEmail(email('x'), { idempotencyUntil: 'finished' }),
      () => sdk.enqueue.sendEmail(email('x'), { idempotencyKey: 'k', idempotencyUntil: 'done' as 'finished' }),
      () => sdk.enqueue.sendEmail(email('x'), { debounce: { ...debounce, mode: 'unsafeDedupe' as 'keepFirst' } }),
      () => sdk.enqueue.sendEmail(email('x'), { debounce, idempotencyUntil: 'finished' }),
    ]) {
      const error = await enqueue().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WorkqError);
      expect(error).toMatchObject({ code: 'VALIDATION' });
    }
  });
});
