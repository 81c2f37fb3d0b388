import { catalogJsonSchemas } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, type Worker } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNoLeak } from '../support/leaks.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { failure, listAllJobs, type RawClient, rawClient, rawFailure } from '../support/raw-client.ts';

const TOKENS = [
  { token: 'prod-token-0123456789', scopes: ['produce:*'] },
  { token: 'work-token-0123456789', scopes: ['consume:*'] },
  { token: 'email-only-token-0123', scopes: ['produce:sendEmail'] },
  { token: 'email-worker-token-01', scopes: ['consume:sendEmail'] },
  { token: 'root-token-0123456789', scopes: ['admin'] },
];
const MAX_PAYLOAD_BYTES = 2048;
const MAX_BATCH_SIZE = 10;

const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

describe('auth and limits over pglite://memory', () => {
  const logger = collectingLogger();
  let server: QueueServer;
  let admin: RawClient;
  const workers: Worker[] = [];

  /** POSTs JSON to a server path and returns status and raw body text. */
  const post = async (path: string, body: unknown, token?: string) => {
    const response = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, text: await response.text() };
  };

  /** The server still answers health checks, reaches its store and serves an authorized query. */
  const expectStillServing = async () => {
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    await expect(admin.admin.stats.query()).resolves.toHaveProperty('counts');
  };

  const countOf = async (name: string) => (await listAllJobs(admin, name)).length;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      tokens: TOKENS,
      limits: { maxPayloadBytes: MAX_PAYLOAD_BYTES, maxBatchSize: MAX_BATCH_SIZE },
      logger,
    });
    admin = rawClient(server.url, 'root-token-0123456789');
    await admin.schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  });

  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
    await server?.close();
  });

  it('refuses a call without a token, or with a wrong one, as UNAUTHORIZED', async () => {
    const anonymous = createClient({ url: server.url, jobs });
    expect(await failure(anonymous.enqueue.sendEmail(email))).toMatchObject({ code: 'UNAUTHORIZED' });
    const wrong = createClient({ url: server.url, jobs, token: 'not-a-real-token-7d1e' });
    expect(await failure(wrong.enqueue.sendEmail(email))).toMatchObject({ code: 'UNAUTHORIZED' });
    const response = await post('/trpc/jobs.enqueue', { json: { name: 'sendEmail', version: 1, payload: email } });
    expect(response.status).toBe(401);
    expectNoLeak(response.text);
    expect(await countOf('sendEmail')).toBe(0);
    await expectStillServing();
  });

  it('refuses a token without the scope as FORBIDDEN, and allows the scope it has', async () => {
    const emailOnly = createClient({ url: server.url, jobs, token: 'email-only-token-0123' });
    const denied = await failure(emailOnly.enqueue.imageConvert({ source: 'a.png', output: 'a.webp' }));
    expect(denied).toMatchObject({ code: 'FORBIDDEN' });
    expect(await countOf('imageConvert')).toBe(0);

    const allowed = await emailOnly.enqueue.sendEmail(email);
    expect(allowed.created).toBe(true);
    await expect(admin.jobs.cancel.mutate({ id: allowed.id })).resolves.toBe(true);

    const prod = createClient({ url: server.url, jobs, token: 'prod-token-0123456789' });
    const claimErrors: unknown[] = [];
    workers.push(
      prod.consume('sendEmail', async () => ({ messageId: 'never' }), { onError: (e) => claimErrors.push(e) }),
    );
    await expect.poll(() => claimErrors.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(claimErrors[0]).toMatchObject({ code: 'FORBIDDEN' });
    await workers.pop()?.close();
    expect(
      await rawFailure(
        rawClient(server.url, 'prod-token-0123456789').consumer.claim.mutate({
          name: 'sendEmail',
          maxVersion: 1,
          limit: 1,
          workerId: 'w',
        }),
      ),
    ).toMatchObject({ code: 'FORBIDDEN' });
    expect(await rawFailure(rawClient(server.url, 'work-token-0123456789').admin.schedules.query())).toMatchObject({
      code: 'FORBIDDEN',
    });
    await expect(admin.admin.schedules.query()).resolves.toEqual([]);
    await expectStillServing();
  });

  it('lets a token end only the waits of claims of job types it may consume', async () => {
    const workerId = 'report-worker-1';
    const claim = rawClient(server.url, 'work-token-0123456789').consumer.claim.mutate({
      name: 'generateReport',
      maxVersion: 1,
      limit: 1,
      workerId,
      waitMs: 20_000,
    });
    const stillWaiting = () =>
      Promise.race([claim.then(() => false), new Promise<boolean>((resolve) => setTimeout(resolve, 300, true))]);
    expect(await stillWaiting()).toBe(true);

    const stranger = rawClient(server.url, 'email-worker-token-01');
    await expect(stranger.consumer.stopWaiting.mutate({ workerId })).resolves.toEqual({ claims: 0 });
    expect(await stillWaiting()).toBe(true);

    const started = Date.now();
    await expect(
      rawClient(server.url, 'work-token-0123456789').consumer.stopWaiting.mutate({ workerId }),
    ).resolves.toEqual({
      claims: 1,
    });
    await expect(claim).resolves.toMatchObject({ jobs: [] });
    expect(Date.now() - started).toBeLessThan(5_000);
    await expectStillServing();
  });

  it('tells a waiting extension of a cancelled job under its worker id only when its token may consume the job', async () => {
    const workerId = 'report-worker-2';
    const work = rawClient(server.url, 'work-token-0123456789');
    const { id } = await rawClient(server.url, 'prod-token-0123456789').jobs.enqueue.mutate({
      name: 'generateReport',
      version: 1,
      payload: { accountId: 'a', kind: 'usage', from: '2026-01-01', to: '2026-01-31' },
    });
    const [held] = (await work.consumer.claim.mutate({ name: 'generateReport', maxVersion: 1, limit: 1, workerId }))
      .jobs;
    expect(held?.id).toBe(id);
    // The worker's id is no secret: a token for another type waits under it, as the worker's own token does.
    const waitUnder = (token: string) =>
      rawClient(server.url, token).consumer.extend.mutate({ items: [], workerId, waitMs: 10_000 });
    const stranger = waitUnder('email-worker-token-01');
    const owner = waitUnder('work-token-0123456789');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await admin.jobs.cancel.mutate({ id })).toBe(true);
    expect(await owner).toEqual([{ id, ok: false, cancelled: true }]);
    expect(await stranger).toEqual([]);
  });

  it('refuses a payload over maxPayloadBytes and a batch over maxBatchSize, storing nothing', async () => {
    const prod = createClient({ url: server.url, jobs, token: 'prod-token-0123456789' });
    const before = await countOf('sendEmail');
    const big = { ...email, body: 'x'.repeat(MAX_PAYLOAD_BYTES + 100) };
    const tooLarge = await failure(prod.enqueue.sendEmail(big));
    expect(tooLarge).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(tooLarge.message).toContain(String(MAX_PAYLOAD_BYTES));

    const batch = Array.from({ length: MAX_BATCH_SIZE + 1 }, (_, i) => ({ ...email, subject: `s${i}` }));
    const tooMany = await failure(prod.enqueueMany.sendEmail(batch));
    expect(tooMany).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(tooMany.message).toContain(String(MAX_BATCH_SIZE));

    const rest = await post('/v1/jobs/sendEmail', { version: 1, payload: big }, 'prod-token-0123456789');
    expect(rest.status).toBe(413);
    expect(JSON.parse(rest.text)).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    expect(await countOf('sendEmail')).toBe(before);
    await expectStillServing();
  });

  it('validates payloads on the server when the SDK is bypassed, naming the field', async () => {
    const raw = rawClient(server.url, 'prod-token-0123456789');
    const before = await countOf('sendEmail');
    const invalid = await rawFailure(
      raw.jobs.enqueue.mutate({ name: 'sendEmail', version: 1, payload: { ...email, to: 'not-an-email' } }),
    );
    expect(invalid.code).toBe('VALIDATION');
    expect(invalid.message).toMatch(/\bto\b/);
    expect(invalid.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: ['to'] })]));

    const missing = await rawFailure(
      raw.jobs.enqueue.mutate({ name: 'sendEmail', version: 1, payload: { to: 'a@example.com', body: 'x' } }),
    );
    expect(missing.code).toBe('VALIDATION');
    expect(missing.message).toContain('subject');

    const batch = [email, email, { ...email, to: 'not-an-email' }, email];
    const inBatch = await rawFailure(raw.jobs.enqueueMany.mutate({ name: 'sendEmail', version: 1, payloads: batch }));
    expect(inBatch.code).toBe('VALIDATION');
    expect(inBatch.message).toMatch(/^Payload 3 of 4 of "sendEmail" v1 is invalid: to:/);

    const rest = await post(
      '/v1/jobs/sendEmail',
      { version: 1, payload: { ...email, subject: 42 } },
      'prod-token-0123456789',
    );
    expect(rest.status).toBe(400);
    const body = JSON.parse(rest.text) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('VALIDATION');
    expect(body.error.message).toContain('subject');
    expectNoLeak(rest.text);

    const trpc = await post(
      '/trpc/jobs.enqueue',
      { json: { name: 'sendEmail', version: 1, payload: { to: 1 } } },
      'prod-token-0123456789',
    );
    expect(trpc.status).toBe(400);
    expectNoLeak(trpc.text);
    expect(await countOf('sendEmail')).toBe(before);
    await expectStillServing();
  });

  it('checks an updatePayload on the server: scope, schema, size, job type and lease', async () => {
    const work = rawClient(server.url, 'work-token-0123456789');
    const payload = { source: 'ckpt.png', output: 'ckpt.webp', format: 'webp', quality: 10 };
    const options = { backoff: { type: 'fixed' as const, delayMs: 0 } };
    const { id } = await admin.jobs.enqueue.mutate({ name: 'imageConvert', version: 2, payload, options });
    const claim = () => work.consumer.claim.mutate({ name: 'imageConvert', maxVersion: 2, limit: 1, workerId: 'raw' });
    const [held] = (await claim()).jobs;
    expect(held?.id).toBe(id);
    const lease = { id, leaseToken: held?.leaseToken as string };
    const update = (client: RawClient, change: object) =>
      client.consumer.updatePayload.mutate({ ...lease, name: 'imageConvert', version: 2, payload, ...change });

    expect(await rawFailure(update(rawClient(server.url, 'prod-token-0123456789'), {}))).toMatchObject({
      code: 'FORBIDDEN',
    });
    const invalid = await rawFailure(update(work, { payload: { ...payload, quality: 500 } }));
    expect(invalid).toMatchObject({ code: 'VALIDATION' });
    expect(invalid.message).toMatch(/quality/);
    const large = { ...payload, source: 'x'.repeat(MAX_PAYLOAD_BYTES) };
    expect(await rawFailure(update(work, { payload: large }))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const otherType = await rawFailure(update(work, { name: 'sendEmail', version: 1, payload: email }));
    expect(otherType).toMatchObject({ code: 'VALIDATION' });
    expect(otherType.message).toMatch(/"imageConvert" job, not "sendEmail"/);
    expect(await rawFailure(update(work, { leaseToken: 'stale' }))).toMatchObject({ code: 'LEASE_LOST' });

    await expect(update(work, { payload: { ...payload, quality: 60 } })).resolves.toBe(true);
    await work.consumer.fail.mutate({ ...lease, message: 'retried from the checkpoint' });
    const [again] = (await claim()).jobs;
    expect(again).toMatchObject({ id, attempt: 2, version: 2, payload: { ...payload, quality: 60 } });
    await work.consumer.complete.mutate({
      items: [{ id, leaseToken: again?.leaseToken as string, result: { bytes: 1 } }],
    });
    await expectStillServing();
  });

  it('refuses a NUL character, which stores cannot keep, as VALIDATION rather than a store failure', async () => {
    const raw = rawClient(server.url, 'prod-token-0123456789');
    const before = await countOf('sendEmail');
    const inPayload = await rawFailure(
      raw.jobs.enqueue.mutate({ name: 'sendEmail', version: 1, payload: { ...email, body: 'a\u0000b' } }),
    );
    expect(inPayload).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('NUL') });
    const inKey = await rawFailure(
      raw.jobs.enqueue.mutate({
        name: 'sendEmail',
        version: 1,
        payload: email,
        options: { idempotencyKey: 'k\u0000' },
      }),
    );
    expect(inKey.code).toBe('VALIDATION');
    const escaped = await raw.jobs.enqueue.mutate({
      name: 'sendEmail',
      version: 1,
      payload: { ...email, body: '\\u0000' },
    });
    expect(escaped.created).toBe(true);
    expect(await countOf('sendEmail')).toBe(before + 1);
    await expectStillServing();
  });

  it('names unknown jobs UNKNOWN_JOB and unregistered versions UNSUPPORTED_VERSION', async () => {
    const raw = rawClient(server.url, 'prod-token-0123456789');
    const unknown = await rawFailure(raw.jobs.enqueue.mutate({ name: 'noSuchJob', version: 1, payload: {} }));
    expect(unknown.code).toBe('UNKNOWN_JOB');
    expect(unknown.message).toContain('noSuchJob');
    const rest = await post('/v1/jobs/noSuchJob', { version: 1, payload: {} }, 'prod-token-0123456789');
    expect(rest.status).toBe(404);
    expect(JSON.parse(rest.text)).toMatchObject({ error: { code: 'UNKNOWN_JOB' } });

    const newer = await rawFailure(raw.jobs.enqueue.mutate({ name: 'sendEmail', version: 7, payload: email }));
    expect(newer.code).toBe('UNSUPPORTED_VERSION');
    expect(newer.message).toContain('7');
    expect(await countOf('noSuchJob')).toBe(0);
    await expectStillServing();
  });

  it('never sends stack traces or database text, whatever the bad request', async () => {
    const probes: { path: string; body: unknown; token?: string }[] = [
      { path: '/trpc/jobs.enqueue', body: '{"json": {"name": ', token: 'prod-token-0123456789' },
      {
        path: '/trpc/jobs.enqueue',
        body: { json: { name: 'sendEmail', version: 'x' } },
        token: 'prod-token-0123456789',
      },
      { path: '/trpc/no.such.procedure', body: { json: {} }, token: 'prod-token-0123456789' },
      { path: '/trpc/jobs.get', body: { json: { id: 'x' } }, token: 'prod-token-0123456789' },
      { path: '/v1/jobs/sendEmail', body: 'not json', token: 'prod-token-0123456789' },
      { path: '/v1/nothing-here', body: {}, token: 'prod-token-0123456789' },
      // NUL characters pass JSON Schema but PostgreSQL rejects them: the store's own error must stay inside.
      {
        path: '/v1/jobs/sendEmail',
        body: { version: 1, payload: { ...email, body: 'a\u0000b' } },
        token: 'prod-token-0123456789',
      },
      {
        path: '/v1/jobs/sendEmail',
        body: { version: 1, payload: email, options: { idempotencyKey: 'k\u0000' } },
        token: 'prod-token-0123456789',
      },
    ];
    for (const probe of probes) {
      const response = await post(probe.path, probe.body, probe.token);
      expect(response.status, `${probe.path} ${JSON.stringify(probe.body)}`).toBeGreaterThanOrEqual(400);
      expectNoLeak(response.text);
      await expectStillServing();
    }
    const queried = await fetch(`${server.url}/trpc/jobs.get?input=${encodeURIComponent('{"json":{"id":"nope"}}')}`, {
      headers: { authorization: 'Bearer prod-token-0123456789' },
    });
    expect(queried.status).toBe(404);
    expectNoLeak(await queried.text());
  });

  it('keeps serving good requests after all of the above', async () => {
    const prod = createClient({ url: server.url, jobs, token: 'prod-token-0123456789' });
    const worker = createClient({ url: server.url, jobs, token: 'work-token-0123456789' });
    workers.push(worker.consume('generateReport', async (job) => ({ url: `r/${job.id}`, rows: 3 })));
    const handle = await prod.enqueue.generateReport({
      accountId: 'acct',
      kind: 'usage',
      from: '2026-01-01',
      to: '2026-01-31',
    });
    await expect(handle.result({ timeoutMs: 20_000 })).resolves.toEqual({ url: `r/${handle.id}`, rows: 3 });
  });

  it('never writes a token to the log', () => {
    const text = JSON.stringify(logger.lines);
    expect(logger.lines.length).toBeGreaterThan(0);
    for (const secret of ['email-only-token-0123', 'not-a-real-token-7d1e', 'Bearer '])
      expect(text).not.toContain(secret);
  });
});

describe('binding beyond loopback', () => {
  it('refuses 0.0.0.0 without tokens, with a message saying what to do', async () => {
    const logger = collectingLogger();
    const refused = await failure(startServer({ store: 'pglite://memory', host: '0.0.0.0', port: 0, logger }));
    expect(refused).toMatchObject({ code: 'VALIDATION' });
    expect(refused.message).toMatch(/0\.0\.0\.0/);
    expect(refused.message).toMatch(/token/i);
  });

  it('starts on 0.0.0.0 with tokens, enforces them, and never logs them', async () => {
    const logger = collectingLogger();
    const secret = 'tok-9f2c41d7e3b8a6';
    const server = await startServer({
      store: 'pglite://memory',
      host: '0.0.0.0',
      port: 0,
      tokens: [{ token: secret, scopes: ['admin'] }],
      logger,
    });
    try {
      const local = `http://127.0.0.1:${server.port}`;
      expect((await fetch(`${local}/healthz`)).status).toBe(200);
      const wrong = createClient({ url: local, jobs, token: 'tok-wrong-55aa01' });
      expect(await failure(wrong.enqueue.sendEmail(email))).toMatchObject({ code: 'UNAUTHORIZED' });
      const right = createClient({ url: local, jobs, token: secret });
      await expect(right.enqueue.sendEmail(email)).resolves.toHaveProperty('created', true);
    } finally {
      await server.close();
    }
    const text = JSON.stringify(logger.lines);
    expect(text).toContain('listening');
    expect(text).not.toContain(secret);
    expect(text).not.toContain('tok-wrong-55aa01');
  });
});
