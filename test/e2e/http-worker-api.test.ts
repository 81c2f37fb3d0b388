import { once } from 'node:events';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { JobStatus } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jsonCall } from '../support/json-call.ts';
import { ChildProcesses } from '../support/processes.ts';
import { collectingLogger } from '../support/quiet-logger.ts';

/**
 * Workers in any language: the plain HTTP API (claim with a long poll,
 * complete, fail, extend, cancel, status) is described at `/v1/openapi.json`
 * with each job type's schemas, and a Python worker with only the standard
 * library (`examples/python-worker/worker.py`) runs jobs through it with a
 * token scoped to its one job type.
 */
const PRODUCER = 'producer-token-0123456789';
const WORKER = 'worker-token-0123456789ab';
const REPORTS = 'reports-token-0123456789a';
const FLOWS = 'flows-token-0123456789abcd';
const REPORTS_ONLY = 'reports-only-token-012345';

let server: QueueServer;
const processes = new ChildProcesses();

beforeAll(async () => {
  server = await startServer({
    store: 'pglite://memory',
    port: 0,
    logger: collectingLogger(),
    jobs,
    tokens: [
      { token: PRODUCER, scopes: ['produce:sendEmail'] },
      { token: WORKER, scopes: ['consume:sendEmail'] },
      { token: REPORTS, scopes: ['consume:generateReport'] },
      { token: FLOWS, scopes: ['produce:generateReport', 'produce:sendEmail'] },
      { token: REPORTS_ONLY, scopes: ['produce:generateReport'] },
    ],
  });
});

afterEach(async () => {
  await processes.killAll();
});

afterAll(async () => {
  await server?.close();
});

const call = (token: string, method: string, path: string, body?: unknown) =>
  jsonCall(server.url, token, method, path, body);

const email = (to: string, subject = 'hello') => ({ to, subject, body: 'from the HTTP API' });

async function enqueue(payload: unknown, options?: Record<string, unknown>): Promise<string> {
  const { status, body } = await call(PRODUCER, 'POST', '/v1/jobs/sendEmail', { version: 1, payload, options });
  expect(status).toBe(201);
  return body.id as string;
}

async function statusOf(id: string): Promise<JobStatus> {
  const { status, body } = await call(PRODUCER, 'GET', `/v1/job/${id}`);
  expect(status).toBe(200);
  return body as JobStatus;
}

async function until(id: string, done: (status: JobStatus) => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await statusOf(id);
    if (done(status)) return status;
    if (Date.now() > deadline) throw new Error(`job ${id} is still ${status.state}: ${JSON.stringify(status)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document with the payload and result schemas of the types the token may use', async () => {
    const { status, body: document } = await call(WORKER, 'GET', '/v1/openapi.json');
    expect(status).toBe(200);
    expect(document.openapi).toBe('3.1.0');
    await SwaggerParser.validate(structuredClone(document) as never);

    const schemas = document.components.schemas;
    expect(schemas['sendEmail.v1.payload'].properties.to).toMatchObject({ type: 'string', format: 'email' });
    expect(schemas['sendEmail.v1.payload'].required).toEqual(['to', 'subject', 'body']);
    expect(schemas['sendEmail.result'].properties.messageId).toEqual({ type: 'string' });
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/jobs/sendEmail',
        '/v1/jobs/sendEmail/claim',
        '/v1/job/{id}',
        '/v1/job/{id}/complete',
        '/v1/job/{id}/fail',
        '/v1/job/{id}/extend',
        '/v1/job/{id}/cancel',
      ]),
    );
    // A type the token may not use is not described.
    expect(schemas['imageConvert.v2.payload']).toBeUndefined();
    expect(document.paths['/v1/jobs/imageConvert/claim']).toBeUndefined();
  });

  it('refuses a caller without a token', async () => {
    const response = await fetch(`${server.url}/v1/openapi.json`);
    expect(response.status).toBe(401);
  });
});

describe('the plain HTTP worker API', () => {
  it('claims, completes, and refuses a stale lease with LEASE_LOST', async () => {
    const id = await enqueue(email('ops@example.com'));
    const claimBody = { workerId: 'http-test', maxVersion: 1, limit: 1, waitMs: 0 };
    const claimed = await call(WORKER, 'POST', '/v1/jobs/sendEmail/claim', claimBody);
    expect(claimed.status).toBe(200);
    const [job] = claimed.body.jobs;
    expect(job).toMatchObject({ id, name: 'sendEmail', version: 1, attempt: 1, payload: email('ops@example.com') });
    expect(typeof job.leaseToken).toBe('string');
    expect(Date.parse(job.leaseExpiresAt)).toBeGreaterThan(Date.now());

    const extended = await call(WORKER, 'POST', `/v1/job/${id}/extend`, {
      leaseToken: job.leaseToken,
      leaseMs: 60_000,
    });
    expect(extended.status).toBe(200);
    expect(Date.parse(extended.body.leaseExpiresAt)).toBeGreaterThan(Date.now() + 50_000);

    const stale = await call(WORKER, 'POST', `/v1/job/${id}/complete`, {
      leaseToken: `${job.leaseToken}x`,
      result: {},
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('LEASE_LOST');
    expect((await statusOf(id)).state).toBe('active');

    const completed = await call(WORKER, 'POST', `/v1/job/${id}/complete`, {
      leaseToken: job.leaseToken,
      result: { messageId: 'm-1' },
    });
    expect(completed.status).toBe(200);
    expect(await statusOf(id)).toMatchObject({ state: 'completed', result: { messageId: 'm-1' } });
  });

  it('waits for work on a long poll, and records a failed attempt', async () => {
    const waiting = call(WORKER, 'POST', '/v1/jobs/sendEmail/claim', {
      workerId: 'poll',
      maxVersion: 1,
      waitMs: 10_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const id = await enqueue(email('poll@example.com'), { maxAttempts: 1 });
    const [job] = (await waiting).body.jobs;
    expect(job.id).toBe(id);

    const failed = await call(WORKER, 'POST', `/v1/job/${id}/fail`, {
      leaseToken: job.leaseToken,
      message: 'mailbox full',
      errorName: 'DeliveryError',
    });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ state: 'dead', attempts: 1 });
    expect((await statusOf(id)).error).toMatchObject({ message: 'mailbox full' });
  });

  it("ends a closing worker's waiting claims at once, only those of types its token may consume", async () => {
    const claim = (token: string, name: string) =>
      call(token, 'POST', `/v1/jobs/${name}/claim`, { workerId: 'closing', maxVersion: 1, waitMs: 20_000 });
    const startedMs = Date.now();
    const emails = claim(WORKER, 'sendEmail');
    const reports = claim(REPORTS, 'generateReport');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const refused = await call(PRODUCER, 'POST', '/v1/workers/closing/stop-waiting');
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN' } } });

    expect(await call(WORKER, 'POST', '/v1/workers/closing/stop-waiting')).toEqual({
      status: 200,
      body: { claims: 1 },
    });
    expect(await emails).toEqual({ status: 200, body: { jobs: [] } });
    expect(Date.now() - startedMs).toBeLessThan(10_000);
    // The other type's claim is not the caller's to end: it still waits, until its own worker's token ends it.
    const stillWaiting = await Promise.race([reports.then(() => false), new Promise((r) => setTimeout(r, 300, true))]);
    expect(stillWaiting).toBe(true);
    expect((await call(REPORTS, 'POST', '/v1/workers/closing/stop-waiting')).body).toEqual({ claims: 1 });
    expect((await reports).body).toEqual({ jobs: [] });
    expect((await call(WORKER, 'POST', '/v1/workers/%ZZ/stop-waiting')).body.error.code).toBe('VALIDATION');
  });

  it('holds each call to the scopes the tRPC procedures ask for', async () => {
    const id = await enqueue(email('scope@example.com'));
    const claimOther = await call(WORKER, 'POST', '/v1/jobs/generateReport/claim', { workerId: 'w', maxVersion: 1 });
    expect(claimOther.status).toBe(403);
    expect(claimOther.body.error.code).toBe('FORBIDDEN');
    expect((await call(REPORTS, 'GET', `/v1/job/${id}`)).status).toBe(403);
    expect((await call(REPORTS, 'POST', `/v1/job/${id}/cancel`)).status).toBe(403);
    expect((await call(PRODUCER, 'POST', `/v1/job/${id}/complete`, { leaseToken: 'x', result: 1 })).status).toBe(403);

    const cancelled = await call(PRODUCER, 'POST', `/v1/job/${id}/cancel`);
    expect(cancelled).toEqual({ status: 200, body: { cancelled: true } });
    expect((await statusOf(id)).state).toBe('cancelled');
  });

  it('enqueues a flow: the parent waits for its children, each of a type the token must also produce', async () => {
    const report = { accountId: 'acct-http', kind: 'usage', from: '2026-11-01', to: '2026-11-30' };
    const children = [1, 2].map((n) => ({ name: 'sendEmail', version: 1, payload: email(`child-${n}@example.com`) }));
    const flow = { version: 1, payload: report, children };
    const document = (await call(FLOWS, 'GET', '/v1/openapi.json')).body;
    expect(document.components.schemas.FlowChild.properties.children.items).toEqual({
      $ref: '#/components/schemas/FlowChild',
    });
    for (const token of [PRODUCER, REPORTS_ONLY]) {
      const refused = await call(token, 'POST', '/v1/jobs/generateReport', flow);
      expect(refused).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN' } } });
    }
    const badChild = { ...flow, children: [children[0], { ...children[1], payload: { to: 'not an address' } }] };
    const invalid = await call(FLOWS, 'POST', '/v1/jobs/generateReport', badChild);
    expect(invalid).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION' } } });
    expect(invalid.body.error.message).toContain('children[1]');

    const { status, body } = await call(FLOWS, 'POST', '/v1/jobs/generateReport', flow);
    expect(status).toBe(201);
    expect(body).toMatchObject({ created: true, state: 'waiting-children' });
    const parent = (await call(FLOWS, 'GET', `/v1/job/${body.id}`)).body as JobStatus;
    expect(parent.children?.map((child) => child.name)).toEqual(['sendEmail', 'sendEmail']);
    const claimParent = { workerId: 'http-flow', maxVersion: 1, limit: 1, waitMs: 0 };
    expect((await call(REPORTS, 'POST', '/v1/jobs/generateReport/claim', claimParent)).body).toEqual({ jobs: [] });
    const childIds = new Set(parent.children?.map((child) => child.id));
    // Runs the children (and any other sendEmail job left ready) until both have completed.
    const deadline = Date.now() + 10_000;
    while (childIds.size > 0 && Date.now() < deadline) {
      const claimed = await call(WORKER, 'POST', '/v1/jobs/sendEmail/claim', {
        ...claimParent,
        limit: 10,
        waitMs: 1_000,
      });
      for (const job of claimed.body.jobs as { id: string; leaseToken: string }[]) {
        await call(WORKER, 'POST', `/v1/job/${job.id}/complete`, { leaseToken: job.leaseToken, result: {} });
        childIds.delete(job.id);
      }
    }
    expect(childIds.size).toBe(0);
    const ready = await call(REPORTS, 'POST', '/v1/jobs/generateReport/claim', { ...claimParent, waitMs: 5_000 });
    expect(ready.body.jobs.map((job: { id: string }) => job.id)).toEqual([body.id]);
  });

  it('refuses bad input with VALIDATION and a message, and no stack or store text', async () => {
    const noWorker = await call(WORKER, 'POST', '/v1/jobs/sendEmail/claim', { maxVersion: 1 });
    expect(noWorker.status).toBe(400);
    expect(noWorker.body.error.code).toBe('VALIDATION');
    expect(noWorker.body.error.message).toMatch(/workerId/);

    const badId = await call(PRODUCER, 'GET', `/v1/job/${'x'.repeat(100)}`);
    expect(badId.status).toBe(400);
    const unknown = await call(PRODUCER, 'GET', '/v1/job/0190f1e2-0000-7000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
    const notJson = await fetch(`${server.url}/v1/job/x/fail`, {
      method: 'POST',
      headers: { authorization: `Bearer ${WORKER}`, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(notJson.status).toBe(415);
    const route = await call(WORKER, 'POST', '/v1/job/x/finish', {});
    expect(route.status).toBe(404);
    for (const answer of [noWorker, badId, unknown, route]) {
      expect(JSON.stringify(answer.body)).not.toMatch(/\n\s+at |\.ts:\d|SELECT|relation/);
    }
  });
});

describe('a Python worker with only the standard library', () => {
  it('claims, runs and completes jobs, fails one whose handler raises, keeps its lease, and exits on SIGTERM', async () => {
    const worker = processes.spawn('python3', ['examples/python-worker/worker.py'], {
      env: {
        WORKQ_URL: server.url,
        WORKQ_TOKEN: WORKER,
        WORKQ_WAIT_MS: '2000',
        // Each email takes 2.5 s to send, longer than its 1.5 s lease: the worker must extend it to complete.
        WORKQ_LEASE_MS: '1500',
        WORKQ_EXAMPLE_SEND_MS: '2500',
      },
    });
    const sent = await enqueue(email('ada@example.com', 'first'));
    const undeliverable = await enqueue(email('nobody@example.invalid'), { maxAttempts: 1 });

    const done = await until(sent, (status) => status.state === 'completed').catch((error: Error) => {
      throw new Error(`${error.message}\n${worker.output()}`);
    });
    expect(done.attempts).toBe(1);
    expect(done.result).toEqual({ messageId: expect.stringMatching(/^<.+@example\.com>$/) });
    const dead = await until(undeliverable, (status) => status.state === 'dead');
    expect(dead.error).toMatchObject({ message: expect.stringContaining('example.invalid') });

    const last = await enqueue(email('grace@example.com', 'last'));
    await until(last, (status) => status.state === 'active');
    processes.signal(worker, 'SIGTERM');
    const [code] = await once(worker, 'exit');
    expect(code, worker.output()).toBe(0);
    expect(await statusOf(last)).toMatchObject({ state: 'completed', attempts: 1 });
  });

  it('exits on SIGTERM at once while its claim waits for work, not once the long poll ends', async () => {
    const worker = processes.spawn('python3', ['examples/python-worker/worker.py'], {
      env: { WORKQ_URL: server.url, WORKQ_TOKEN: WORKER, WORKQ_WAIT_MS: '25000' },
    });
    const ran = await enqueue(email('first@example.com'));
    await until(ran, (status) => status.state === 'completed');
    // Its next claim is waiting now: a SIGTERM ends it on the server, and the worker exits.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const signalledMs = Date.now();
    processes.signal(worker, 'SIGTERM');
    const [code] = await once(worker, 'exit');
    expect(code, worker.output()).toBe(0);
    expect(Date.now() - signalledMs, worker.output()).toBeLessThan(10_000);
  });

  it('puts a job back to run later, or holds the type after a 429, without counting the attempt', async () => {
    const worker = processes.spawn('python3', ['examples/python-worker/worker.py'], {
      env: { WORKQ_URL: server.url, WORKQ_TOKEN: WORKER, WORKQ_WAIT_MS: '2000' },
    });
    const startedMs = Date.now();
    // The example turns each recipient of these domains away once: the first with RetryLater, the second with
    // RateLimited, each for 1 s.
    const greylisted = await enqueue(email('ada@greylisting.test'), { maxAttempts: 1 });
    const busy = await enqueue(email('grace@busy.test'), { maxAttempts: 1 });
    for (const id of [greylisted, busy]) {
      const done = await until(id, (status) => status.state === 'completed').catch((error: Error) => {
        throw new Error(`${error.message}\n${worker.output()}`);
      });
      expect(done).toMatchObject({ attempts: 1 });
      expect(done.error).toBeUndefined();
    }
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(1_000);
    expect(worker.output()).toMatch(/again in 1000 ms; runs again at /);
    expect(worker.output()).toMatch(/the type is held 1000 ms; no sendEmail job starts before /);
    processes.signal(worker, 'SIGTERM');
    const [code] = await once(worker, 'exit');
    expect(code, worker.output()).toBe(0);
  });
});
