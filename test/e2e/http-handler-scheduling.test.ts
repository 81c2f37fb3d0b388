import SwaggerParser from '@apidevtools/swagger-parser';
import { defineCatalog, defineJob } from '@workq/core';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { type JsonAnswer, jsonCall } from '../support/json-call.ts';
import { oneServerOnStore } from '../support/one-server.ts';
import { describeEachStore, SERVER_STORES } from '../support/stores.ts';

/**
 * A worker in any language schedules its own job over the plain HTTP API as `ctx.delay`, `ctx.retryAt` and
 * `ctx.rateLimited` do: `POST /v1/job/{id}/snooze` and `POST /v1/job/{id}/rate-limited`, fenced by the
 * lease, with the scopes of their tRPC procedures, over plain `fetch`.
 */
const PRODUCER = 'producer-token-0123456789';
const WORKER = 'worker-token-0123456789ab';
const OTHER_WORKER = 'other-worker-token-012345';

const catalog = defineCatalog({
  callUpstream: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    defaults: { maxAttempts: 1, leaseMs: 10_000 },
  }),
  otherWork: defineJob({ version: 1, payload: z.object({ n: z.number() }) }),
});

await describeEachStore(SERVER_STORES, 'handler scheduling over plain HTTP on $label', ({ open }) => {
  const server = oneServerOnStore(open, {
    jobs: catalog,
    tokens: [
      { token: PRODUCER, scopes: ['produce:callUpstream'] },
      { token: WORKER, scopes: ['consume:callUpstream'] },
      { token: OTHER_WORKER, scopes: ['consume:otherWork'] },
    ],
  });

  const call = (token: string, method: string, path: string, body?: unknown) =>
    jsonCall(server.url, token, method, path, body);

  async function enqueue(n: number): Promise<string> {
    const { status, body } = await call(PRODUCER, 'POST', '/v1/jobs/callUpstream', { version: 1, payload: { n } });
    expect(status).toBe(201);
    return body.id as string;
  }

  /** Claims jobs of the type, waiting up to `waitMs` for one. */
  async function claim(waitMs = 0, limit = 1): Promise<JsonAnswer[]> {
    const body = { workerId: 'http-scheduler', maxVersion: 1, limit, waitMs };
    const claimed = await call(WORKER, 'POST', '/v1/jobs/callUpstream/claim', body);
    expect(claimed.status).toBe(200);
    return claimed.body.jobs;
  }

  /** Claims the one job with `id`, completing any other job claimed on the way. */
  async function claimJob(id: string): Promise<JsonAnswer> {
    const [job] = await claim(10_000);
    expect(job?.id).toBe(id);
    return job;
  }

  it('describes both routes in the OpenAPI document, which stays valid', async () => {
    const { status, body: document } = await call(WORKER, 'GET', '/v1/openapi.json');
    expect(status).toBe(200);
    await SwaggerParser.validate(structuredClone(document) as never);
    const snooze = document.paths['/v1/job/{id}/snooze'].post;
    expect(Object.keys(snooze.requestBody.content['application/json'].schema.properties)).toEqual([
      'leaseToken',
      'delayMs',
      'runAt',
    ]);
    expect(snooze.responses['200'].content['application/json'].schema.required).toEqual(['runAt']);
    const rateLimited = document.paths['/v1/job/{id}/rate-limited'].post;
    expect(rateLimited.requestBody.content['application/json'].schema.required).toEqual(['leaseToken', 'holdMs']);
    expect(rateLimited.responses['200'].content['application/json'].schema.required).toEqual(['heldUntil']);
  });

  it.each([
    ['delayMs', (): object => ({ delayMs: 1_500 })],
    ['runAt', (): object => ({ runAt: new Date(Date.now() + 1_500).toISOString() })],
  ])(
    'snooze with %s puts the job back to scheduled, its attempt not counted, fenced by the lease',
    async (_how, until) => {
      const id = await enqueue(1);
      const job = await claimJob(id);
      expect(job.attempt).toBe(1);
      const startedMs = Date.now();

      const snoozed = await call(WORKER, 'POST', `/v1/job/${id}/snooze`, { leaseToken: job.leaseToken, ...until() });
      expect(snoozed.status).toBe(200);
      expect(Date.parse(snoozed.body.runAt)).toBeGreaterThanOrEqual(startedMs + 1_400);
      const status = await call(PRODUCER, 'GET', `/v1/job/${id}`);
      expect(status.body).toMatchObject({ state: 'scheduled', attempts: 0 });

      // The lease ended with the snooze: the old holder can neither complete nor snooze the job again.
      const late = await call(WORKER, 'POST', `/v1/job/${id}/complete`, { leaseToken: job.leaseToken, result: null });
      expect(late).toMatchObject({ status: 409, body: { error: { code: 'LEASE_LOST' } } });
      const again = await call(WORKER, 'POST', `/v1/job/${id}/snooze`, { leaseToken: job.leaseToken, delayMs: 10 });
      expect(again).toMatchObject({ status: 409, body: { error: { code: 'LEASE_LOST' } } });
      expect(await claim()).toEqual([]);

      const rerun = await claimJob(id);
      // The store runs it by its own clock, which may be a few milliseconds ahead of this process.
      expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(snoozed.body.runAt) - 50);
      expect(rerun.attempt).toBe(1);
      const done = await call(WORKER, 'POST', `/v1/job/${id}/complete`, { leaseToken: rerun.leaseToken, result: null });
      expect(done.status).toBe(200);
      expect((await call(PRODUCER, 'GET', `/v1/job/${id}`)).body).toMatchObject({ state: 'completed', attempts: 1 });
    },
  );

  it('rate-limited holds the whole type until heldUntil and gives the job back ready, its attempt not counted', async () => {
    const first = await enqueue(2);
    const job = await claimJob(first);
    const second = await enqueue(3);

    const held = await call(WORKER, 'POST', `/v1/job/${first}/rate-limited`, {
      leaseToken: job.leaseToken,
      holdMs: 1_500,
    });
    expect(held.status).toBe(200);
    const heldUntilMs = Date.parse(held.body.heldUntil);
    expect(heldUntilMs).toBeGreaterThan(Date.now() + 300);
    expect((await call(PRODUCER, 'GET', `/v1/job/${first}`)).body).toMatchObject({ state: 'ready', attempts: 0 });
    // Neither the job given back nor the other one is claimed while the type is held.
    expect(await claim(0, 2)).toEqual([]);
    const late = await call(WORKER, 'POST', `/v1/job/${first}/fail`, { leaseToken: job.leaseToken, message: 'x' });
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'LEASE_LOST' } } });

    const claimed: JsonAnswer[] = [];
    while (claimed.length < 2) claimed.push(...(await claim(10_000, 2)));
    expect(Date.now()).toBeGreaterThanOrEqual(heldUntilMs - 50);
    expect(claimed.map((each) => each.id).sort()).toEqual([first, second].sort());
    expect(claimed.map((each) => each.attempt)).toEqual([1, 1]);
    for (const each of claimed) {
      const done = await call(WORKER, 'POST', `/v1/job/${each.id}/complete`, {
        leaseToken: each.leaseToken,
        result: null,
      });
      expect(done.status).toBe(200);
    }
  });

  it('refuses a token that may not consume the type with FORBIDDEN, a stale lease with LEASE_LOST, bad bodies with VALIDATION', async () => {
    const id = await enqueue(4);
    const job = await claimJob(id);
    const { leaseToken } = job;
    const snooze = (token: string, body: object) => call(token, 'POST', `/v1/job/${id}/snooze`, body);
    const hold = (token: string, body: object) => call(token, 'POST', `/v1/job/${id}/rate-limited`, body);

    for (const answer of [
      await snooze(PRODUCER, { leaseToken, delayMs: 100 }),
      await hold(PRODUCER, { leaseToken, holdMs: 100 }),
      await snooze(OTHER_WORKER, { leaseToken, delayMs: 100 }),
    ]) {
      expect(answer).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN' } } });
    }
    for (const answer of [
      await snooze(WORKER, { leaseToken: `${leaseToken}x`, delayMs: 100 }),
      await hold(WORKER, { leaseToken: `${leaseToken}x`, holdMs: 100 }),
    ]) {
      expect(answer).toMatchObject({ status: 409, body: { error: { code: 'LEASE_LOST' } } });
    }
    for (const answer of [
      await snooze(WORKER, { leaseToken, delayMs: 100, runAt: new Date().toISOString() }),
      await snooze(WORKER, { leaseToken }),
      await snooze(WORKER, { leaseToken, runAt: 'tomorrow' }),
      await snooze(WORKER, { leaseToken, delayMs: 0 }),
      await hold(WORKER, { leaseToken, holdMs: 2 * 86_400_000 }),
      await hold(WORKER, { leaseToken }),
    ]) {
      expect(answer).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION' } } });
    }
    // None of the refusals touched the job: it is still held, and its holder completes it.
    const done = await call(WORKER, 'POST', `/v1/job/${id}/complete`, { leaseToken, result: null });
    expect(done.status).toBe(200);
  });
});
