import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, defaultFetch, PermanentError, type Worker, WorkqError } from '@workq/sdk';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { describeEachStore, type FreshStore, IN_PROCESS_STORES, serverStore } from '../support/stores.ts';

await describeEachStore(IN_PROCESS_STORES, 'enqueue → consume → result over $label', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;
  let sdk: ReturnType<typeof createClient<typeof jobs>>;
  const workers: Worker[] = [];

  beforeAll(async () => {
    target = await open();
    server = await startServer({
      store: await serverStore(target),
      port: 0,
      logger: collectingLogger(),
      pollIntervalMs: 200,
    });
    sdk = createClient({ url: server.url, jobs });
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  it('delivers the parsed payload and returns the typed result', async () => {
    const seen: unknown[] = [];
    workers.push(
      sdk.consume('imageConvert', async (job) => {
        seen.push(job.payload);
        return { bytes: job.payload.quality * 10 };
      }),
    );
    const handle = await sdk.enqueue.imageConvert({ source: 'a.png', output: 'a.webp', quality: 42 });
    expect(handle.id).toMatch(/^[0-9a-f-]{36}$/);
    await expect(handle.result({ timeoutMs: 20_000 })).resolves.toEqual({ bytes: 420 });
    expect(seen).toEqual([{ source: 'a.png', output: 'a.webp', quality: 42, format: 'webp' }]);
    const status = await handle.status();
    expect(status).toMatchObject({
      state: 'completed',
      attempts: 1,
      name: 'imageConvert',
      version: 2,
      result: { bytes: 420 },
    });
  });

  it('reports no lost lease when a worker closes while its claim waits with the last ack', async () => {
    const errors: unknown[] = [];
    const worker = sdk.consume('imageConvert', async () => ({ bytes: 1 }), { onError: (error) => errors.push(error) });
    const handle = await sdk.enqueue.imageConvert({ source: 'close.png', output: 'close.webp', quality: 1 });
    await expect(handle.result({ timeoutMs: 20_000 })).resolves.toEqual({ bytes: 1 });
    // The next claim carried the ack, found nothing and waits; closing aborts it before it answers.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await worker.close();
    expect(errors).toEqual([]);
    expect(await handle.status()).toMatchObject({ state: 'completed', attempts: 1 });
  });

  it('answers a closing worker’s waiting claim instead of dropping it, so the next job waits for the next worker', async () => {
    const paths: string[] = [];
    let droppedClaims = 0;
    const watched = createClient({
      url: server.url,
      jobs,
      fetch: (input, init) => {
        const path = new URL(input instanceof Request ? input.url : input).pathname;
        paths.push(path);
        // (The worker's waiting lease extension, a watch for cancellations that carries nothing, ends so.)
        if (path.includes('consumer.claim')) init?.signal?.addEventListener('abort', () => droppedClaims++);
        return (defaultFetch ?? fetch)(input, init);
      },
    });
    const closing = watched.consume('sendEmail', async (job) => ({ messageId: job.payload.subject }));
    const first = await sdk.enqueue.sendEmail({ to: 'w@example.com', subject: 'before close', body: '' });
    await first.result({ timeoutMs: 20_000 });
    // Its next claim, carrying the ack, found nothing and waits.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await closing.close();
    expect(paths.filter((path) => path.includes('consumer.claim')).length).toBeGreaterThan(1);
    expect(droppedClaims).toBe(0);
    expect(paths.filter((path) => path.includes('consumer.complete'))).toEqual([]);

    const next = await sdk.enqueue.sendEmail({ to: 'w@example.com', subject: 'after close', body: '' });
    workers.push(sdk.consume('sendEmail', async (job) => ({ messageId: job.payload.subject })));
    await expect(next.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: 'after close' });
    expect(await next.status()).toMatchObject({ attempts: 1 });
  });

  it('enqueues a batch in one call and completes every job', async () => {
    workers.push(
      sdk.consume('sendEmail', async (job) => ({ messageId: `m-${job.payload.subject}` }), { concurrency: 8 }),
    );
    const payloads = Array.from({ length: 40 }, (_, i) => ({ to: `u${i}@example.com`, subject: `s${i}`, body: 'hi' }));
    const handles = await sdk.enqueueMany.sendEmail(payloads);
    expect(new Set(handles.map((h) => h.id)).size).toBe(40);
    // A handle's methods work detached from it, as a destructured `result`.
    const results = await Promise.all(handles.map(({ result }) => result({ timeoutMs: 20_000 })));
    expect(results.map((r) => r.messageId).sort()).toEqual(payloads.map((p) => `m-${p.subject}`).sort());
    const { status } = handles[0] as (typeof handles)[number];
    expect(await status()).toMatchObject({ state: 'completed' });
  });

  it('runs higher priority first and holds delayed jobs until due', async () => {
    const order: string[] = [];
    const low = await sdk.enqueue.generateReport(
      { accountId: 'low', kind: 'usage', from: '2026-01-01', to: '2026-01-31' },
      { priority: 1 },
    );
    const high = await sdk.enqueue.generateReport(
      { accountId: 'high', kind: 'usage', from: '2026-01-01', to: '2026-01-31' },
      { priority: 5 },
    );
    const delayed = await sdk.enqueue.generateReport(
      { accountId: 'delayed', kind: 'audit', from: '2026-01-01', to: '2026-01-31' },
      { priority: 100, delayMs: 1500 },
    );
    const enqueuedAt = Date.now();
    expect((await delayed.status()).state).toBe('scheduled');
    let ranDelayedAt = 0;
    workers.push(
      sdk.consume('generateReport', async (job) => {
        order.push(job.payload.accountId);
        if (job.payload.accountId === 'delayed') ranDelayedAt = Date.now();
        return { url: `https://reports/${job.id}`, rows: 1 };
      }),
    );
    await Promise.all([low, high, delayed].map((h) => h.result({ timeoutMs: 20_000 })));
    expect(order).toEqual(['high', 'low', 'delayed']);
    expect(ranDelayedAt - enqueuedAt).toBeGreaterThanOrEqual(1400);
  });

  it('sends a job dead on PermanentError and rejects its result with the error', async () => {
    const local = createClient({ url: server.url, jobs });
    const worker = local.consume('sendEmail', async (job) => {
      if (job.payload.subject === 'bounce') throw new PermanentError('mailbox does not exist');
      return { messageId: 'ok' };
    });
    workers.push(worker);
    const handle = await local.enqueue.sendEmail({ to: 'x@example.com', subject: 'bounce', body: '' });
    const failure = await handle.result({ timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(WorkqError);
    expect((failure as WorkqError).message).toContain('mailbox does not exist');
    const status = await handle.status();
    expect(status.state).toBe('dead');
    expect(status.attempts).toBe(1);
    expect(status.error).toMatchObject({ message: 'mailbox does not exist', permanent: true });
  });

  it('retries a throwing handler with backoff until it succeeds', async () => {
    const attempts: number[] = [];
    const handle = await sdk.enqueue.imageConvert(
      { source: 'flaky.png', output: 'flaky.webp' },
      { backoff: { type: 'fixed', delayMs: 100 }, maxAttempts: 3 },
    );
    const worker = createClient({ url: server.url, jobs }).consume('imageConvert', async (job) => {
      if (job.payload.source !== 'flaky.png') return { bytes: 0 };
      attempts.push(job.attempt);
      if (job.attempt < 3) throw new Error(`transient ${job.attempt}`);
      return { bytes: 3 };
    });
    workers.push(worker);
    await expect(handle.result({ timeoutMs: 20_000 })).resolves.toEqual({ bytes: 3 });
    expect(attempts).toEqual([1, 2, 3]);
  });

  it('starts a retry from the payload its handler saved with updatePayload', async () => {
    const seen: { attempt: number; quality: number }[] = [];
    const handle = await sdk.enqueue.imageConvert(
      { source: 'resume.png', output: 'resume.webp', quality: 10 },
      { backoff: { type: 'fixed', delayMs: 100 }, maxAttempts: 2 },
    );
    const worker = createClient({ url: server.url, jobs }).consume('imageConvert', async (job, ctx) => {
      if (job.payload.source !== 'resume.png') return { bytes: 0 };
      seen.push({ attempt: job.attempt, quality: job.payload.quality });
      if (job.attempt === 1) {
        await ctx.updatePayload({ ...job.payload, quality: 55 });
        // Checked against the schema before it is sent.
        await expect(ctx.updatePayload({ ...job.payload, quality: 500 })).rejects.toMatchObject({ code: 'VALIDATION' });
        throw new Error('crashed after the checkpoint');
      }
      return { bytes: job.payload.quality };
    });
    workers.push(worker);
    await expect(handle.result({ timeoutMs: 20_000 })).resolves.toEqual({ bytes: 55 });
    expect(seen).toEqual([
      { attempt: 1, quality: 10 },
      { attempt: 2, quality: 55 },
    ]);
  });

  it('shows progress, and moveTo turns a job into the next one atomically', async () => {
    const client = createClient({ url: server.url, jobs });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const worker = client.consume('generateReport', async (job, ctx) => {
      if (job.payload.accountId !== 'pipeline') return { url: '', rows: 0 };
      // The context's methods work detached from it, as a destructured `progress`.
      const { progress } = ctx;
      await progress(40);
      await gate;
      await ctx.moveTo('sendEmail', { to: 'owner@example.com', subject: 'report ready', body: job.id });
      return { url: 'unused', rows: 0 };
    });
    workers.push(worker);
    const emails: string[] = [];
    workers.push(
      client.consume('sendEmail', async (job) => {
        emails.push(job.payload.subject);
        return { messageId: 'sent' };
      }),
    );
    const handle = await client.enqueue.generateReport({
      accountId: 'pipeline',
      kind: 'billing',
      from: '2026-02-01',
      to: '2026-02-28',
    });
    await expect.poll(async () => (await handle.status()).progress, { timeout: 10_000 }).toBe(40);
    release();
    await expect.poll(async () => (await handle.status()).state, { timeout: 10_000 }).toBe('completed');
    const status = await handle.status();
    expect(status.movedTo).toBeDefined();
    await expect.poll(() => emails.includes('report ready'), { timeout: 10_000 }).toBe(true);
    const next = client.job('sendEmail', status.movedTo as string);
    await expect(next.result({ timeoutMs: 10_000 })).resolves.toEqual({ messageId: 'sent' });
  });

  it('refuses children handed to moveTo from plain JavaScript (VALIDATION), moving nothing', async () => {
    const client = createClient({ url: server.url, jobs });
    let refusal: unknown;
    const worker = client.consume('generateReport', async (job, ctx) => {
      if (job.payload.accountId !== 'move-with-children') return { url: '', rows: 0 };
      const options = { children: [client.child.sendEmail({ to: 'a@example.com', subject: 'child', body: '' })] };
      try {
        // Types keep children out of moveTo's options: this is what an untyped caller can still send.
        await ctx.moveTo('sendEmail', { to: 'owner@example.com', subject: 'moved', body: job.id }, options as object);
      } catch (error) {
        refusal = error;
      }
      return { url: 'stayed', rows: 1 };
    });
    workers.push(worker);
    const handle = await client.enqueue.generateReport({
      accountId: 'move-with-children',
      kind: 'billing',
      from: '2026-02-01',
      to: '2026-02-28',
    });
    await expect(handle.result({ timeoutMs: 10_000 })).resolves.toEqual({ url: 'stayed', rows: 1 });
    expect(refusal).toBeInstanceOf(WorkqError);
    expect(refusal).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('waitForChildren') });
    expect((await handle.status()).movedTo).toBeUndefined();
  });

  it('refuses an enqueue option it does not know from plain JavaScript (VALIDATION), storing only the others', async () => {
    const email = { to: 'typo@example.com', subject: 'typo', body: '' };
    const scheduledEmails = async () =>
      (await sdk.admin.list({ name: 'sendEmail', state: 'scheduled', limit: 1000 })).jobs.length;
    const scheduledBefore = await scheduledEmails();
    // `delay` for `delayMs`: were it dropped, the job would run at once. Sent in one turn with a well-formed
    // enqueue, which the SDK sends in a request of its own (its options differ) and which is stored.
    const [typo, fine] = await Promise.allSettled([
      sdk.enqueue.sendEmail(email, { delay: 60_000 } as object),
      sdk.enqueue.sendEmail(email, { delayMs: 60_000 }),
    ]);
    expect(typo.status === 'rejected' && typo.reason).toBeInstanceOf(WorkqError);
    expect(typo.status === 'rejected' && typo.reason).toMatchObject({
      code: 'VALIDATION',
      message: expect.stringMatching(/options.*delay/),
    });
    expect(fine.status === 'fulfilled' && (await fine.value.status()).state).toBe('scheduled');
    const perJob = sdk.enqueueMany.sendEmail([email, email], {
      delayMs: 60_000,
      perJob: [undefined, { priorty: 5 } as object],
    });
    await expect(perJob).rejects.toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('priorty') });
    expect(await scheduledEmails()).toBe(scheduledBefore + 1);
  });

  it('cancels a waiting job, which then never runs', async () => {
    const handle = await sdk.enqueue.imageConvert({ source: 'never.png', output: 'never.webp' }, { delayMs: 60_000 });
    await expect(handle.cancel()).resolves.toBe(true);
    await expect(handle.cancel()).resolves.toBe(false);
    expect((await handle.status()).state).toBe('cancelled');
    const failure = await handle.result({ timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'CONFLICT' });
  });

  it("aborts a running handler's signal with LEASE_LOST when its job is cancelled", async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const abortReason = new Promise<unknown>((resolve) => {
      workers.push(
        sdk.consume('sendEmail', async (_job, ctx) => {
          started();
          await new Promise((wake) => ctx.signal.addEventListener('abort', wake, { once: true }));
          resolve(ctx.signal.reason);
          return { messageId: 'never recorded' };
        }),
      );
    });
    const handle = await sdk.enqueue.sendEmail({ to: 'a@example.com', subject: 'long', body: 'x' }, { leaseMs: 600 });
    await running;
    expect(await handle.cancel()).toBe(true);
    // The lease keeper extends every 200 ms; the server answers that this lease is gone.
    expect(await abortReason).toMatchObject({ code: 'LEASE_LOST' });
    expect(await handle.status()).toMatchObject({ state: 'cancelled', attempts: 1 });
  });

  it('keeps prefetched jobs leased while they wait, so each runs once on its first attempt', async () => {
    const runs: string[] = [];
    workers.push(
      sdk.consume(
        'sendEmail',
        async (job) => {
          runs.push(job.id);
          await new Promise((resolve) => setTimeout(resolve, 300));
          return { messageId: job.payload.subject };
        },
        { concurrency: 1, prefetch: 15 },
      ),
    );
    // The last of 16 jobs waits about 4.5 s in the local queue, well past its 3 s lease; the lease keeper
    // extends every second, which leaves two seconds of slack for a loaded machine (PGlite runs its
    // queries on this process's event loop).
    const payloads = Array.from({ length: 16 }, (_, i) => ({ to: 'p@example.com', subject: `p${i}`, body: 'x' }));
    const handles = await sdk.enqueueMany.sendEmail(payloads, { leaseMs: 3_000 });
    await Promise.all(handles.map((handle) => handle.result({ timeoutMs: 20_000 })));
    expect([...runs].sort()).toEqual(handles.map((handle) => handle.id).sort());
    for (const handle of handles) {
      const status = await handle.status();
      expect(status.attempts, `job ${handle.id}: ${JSON.stringify(status.error)}`).toBe(1);
    }
  });

  it('returns the existing job for a repeated idempotency key', async () => {
    const payload = { source: 'same.png', output: 'same.webp' };
    const first = await sdk.enqueue.imageConvert(payload, { idempotencyKey: 'order-7', delayMs: 60_000 });
    const second = await sdk.enqueue.imageConvert(payload, { idempotencyKey: 'order-7', delayMs: 60_000 });
    expect(second.id).toBe(first.id);
    expect([first.created, second.created]).toEqual([true, false]);
  });

  it('hands a job enqueued while its consumer waits straight to it, leased in its insert', async () => {
    const counted = async (metric: RegExp) => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(metric.exec(text)?.[1] ?? 0);
    };
    const handedOver = () => counted(/^workq_jobs_handed_over_total\{name="sendEmail"\} (\d+)/m);
    const skippedQueries = () => counted(/^workq_claim_queries_total\{name="sendEmail",query="skipped"\} (\d+)/m);
    const [before, skippedBefore] = [await handedOver(), await skippedQueries()];
    const attempts: number[] = [];
    workers.push(
      sdk.consume('sendEmail', async (job) => {
        attempts.push(job.attempt);
        return { messageId: job.payload.subject };
      }),
    );
    for (const subject of ['one', 'two', 'three']) {
      // Long enough for the consumer's claim to find nothing and wait on the server.
      await new Promise((resolve) => setTimeout(resolve, 150));
      const handle = await sdk.enqueue.sendEmail({ to: 'ops@example.com', subject, body: '' });
      await expect(handle.result({ timeoutMs: 20_000 })).resolves.toEqual({ messageId: subject });
    }
    expect(attempts).toEqual([1, 1, 1]);
    // Every store leases in the insert (its `handoff`).
    const handed = (await handedOver()) - before;
    // The claim that follows a handoff parks without a query: nothing of its type was announced since.
    const skipped = (await skippedQueries()) - skippedBefore;
    expect(handed).toBeGreaterThanOrEqual(1);
    expect(skipped).toBeGreaterThanOrEqual(1);
  });

  it('exposes Prometheus metrics of what it did and what the store holds', async () => {
    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    const text = await response.text();
    const completed = Number(/^workq_jobs_completed_total (\d+)/m.exec(text)?.[1]);
    expect(completed).toBeGreaterThan(40);
    expect(text).toMatch(/^workq_jobs_enqueued_total\{name="sendEmail"\} \d+/m);
    expect(text).toMatch(/^workq_jobs\{name="imageConvert",version="2",state="completed"\} \d+/m);
  });
});
