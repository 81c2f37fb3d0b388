import type { QueueServer } from '@workq/queue-server';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  applyEdits,
  bodyText,
  contentType,
  depth,
  editsOf,
  email,
  hostileTarget,
  type Lease,
  nasty,
  percentEncode,
  RUNS,
  startHostileServer,
  type TrpcCalls,
  token,
} from '../support/hostile-input.ts';
import { describeEachStore, type FreshStore, IN_PROCESS_STORES } from '../support/stores.ts';

/** The type whose jobs are held for the fenced writes: a hold or a pause on it is lifted before each. */
const HELD = 'fuzzHeld';
/** The type the admin writes pause, limit and schedule, so that no other type's jobs stop being claimed. */
const ADMINISTERED = 'fuzzAdmin';

const child = (onFailure: string) => ({ name: HELD, version: 1, payload: { n: 1 }, options: {}, onFailure });

/** Each write: its tRPC path, whether it acts on a held job, and a valid input on `lease`. */
const WRITES: TrpcCalls = {
  flow: {
    path: 'jobs.enqueue',
    held: false,
    input: () => ({
      name: 'sendEmail',
      version: 1,
      payload: email,
      options: {},
      children: [{ ...child('ignore'), children: [child('fail-parent')] }, child('continue')],
    }),
  },
  release: { path: 'consumer.release', held: true, input: (lease) => ({ name: HELD, items: [lease] }) },
  waitForChildren: {
    path: 'consumer.waitForChildren',
    held: true,
    input: (lease) => ({
      ...lease,
      children: [child('continue'), { ...child('ignore'), children: [child('ignore')] }],
    }),
  },
  snooze: { path: 'consumer.snooze', held: true, input: (lease) => ({ ...lease, name: HELD, delayMs: 1_000 }) },
  retryAt: { path: 'consumer.snooze', held: true, input: (lease) => ({ ...lease, name: HELD, runAt: new Date() }) },
  rateLimited: { path: 'consumer.rateLimited', held: true, input: (lease) => ({ ...lease, holdMs: 1_000 }) },
  pause: { path: 'admin.pause', held: false, input: () => ({ name: ADMINISTERED }) },
  resume: { path: 'admin.resume', held: false, input: () => ({ name: ADMINISTERED }) },
  setLimits: {
    path: 'admin.setLimits',
    held: false,
    input: () => ({
      name: ADMINISTERED,
      limits: { concurrency: 2, rateLimit: { max: 5, perMs: 1_000 }, groupConcurrency: 1, groupOrder: 'strict' },
    }),
  },
  upsertSchedule: {
    path: 'admin.upsertSchedule',
    held: false,
    input: () => ({
      key: 'fuzz',
      cron: '*/5 * * * *',
      timezone: 'Europe/Paris',
      name: ADMINISTERED,
      payload: { n: 1 },
      version: 1,
      options: { priority: 1 },
    }),
  },
  removeSchedule: { path: 'admin.removeSchedule', held: false, input: () => ({ key: 'fuzz' }) },
  removeSchema: { path: 'admin.removeSchema', held: false, input: () => ({ name: ADMINISTERED, version: 1 }) },
  removeByKey: { path: 'admin.removeByKey', held: false, input: () => ({ name: ADMINISTERED, key: 'k' }) },
  promote: { path: 'admin.promote', held: true, input: (lease) => ({ id: lease.id }) },
  retry: { path: 'admin.retry', held: true, input: (lease) => ({ id: lease.id }) },
  restore: { path: 'admin.restore', held: true, input: (lease) => ({ id: lease.id }) },
  retryDeadIds: { path: 'admin.retryDead', held: true, input: (lease) => ({ ids: [lease.id] }) },
  prune: { path: 'admin.prune', held: false, input: () => undefined },
};

/** Every read, and the one admin check that stores nothing: valid inputs, on a held job where they name one. */
const READS: TrpcCalls = {
  jobs: {
    path: 'admin.jobs',
    query: true,
    held: false,
    input: () => ({
      name: 'sendEmail',
      state: 'ready',
      version: 1,
      group: 'g',
      search: 's',
      createdFromMs: 0,
      createdToMs: 1e12,
      limit: 10,
      cursor: 'c',
    }),
  },
  job: { path: 'admin.job', query: true, held: true, input: (lease) => ({ id: lease.id }) },
  list: {
    path: 'admin.list',
    query: true,
    held: false,
    input: () => ({ name: 'sendEmail', state: 'ready', limit: 5 }),
  },
  stats: { path: 'admin.stats', query: true, held: false, input: () => undefined },
  queues: { path: 'admin.queues', query: true, held: false, input: () => undefined },
  workers: { path: 'admin.workers', query: true, held: false, input: () => undefined },
  schedules: { path: 'admin.schedules', query: true, held: false, input: () => undefined },
  schemas: { path: 'schemas.list', query: true, held: false, input: () => undefined },
  get: { path: 'jobs.get', query: true, held: true, input: (lease) => ({ id: lease.id }) },
  wait: { path: 'jobs.wait', query: true, held: true, input: (lease) => ({ id: lease.id, timeoutMs: 10 }) },
  statusChildren: {
    path: 'jobs.children',
    query: true,
    held: true,
    input: (lease) => ({ id: lease.id, afterId: lease.id, limit: 10 }),
  },
  heldChildren: {
    path: 'consumer.children',
    query: true,
    held: true,
    input: (lease) => ({ ...lease, afterId: lease.id, limit: 10 }),
  },
  checkPayload: {
    path: 'admin.checkPayload',
    held: false,
    input: () => ({ name: HELD, version: 1, payload: { n: 1 } }),
  },
};

/** Each plain HTTP worker route: its method, its path on a job `id`, and a valid body on `lease`. */
const ROUTES: Record<
  string,
  { method: 'GET' | 'POST'; path: (id: string) => string; body?: (lease: Lease) => unknown }
> = {
  claim: {
    method: 'POST',
    path: () => `/v1/jobs/${HELD}/claim`,
    body: () => ({ workerId: 'fuzz', minVersion: 1, maxVersion: 1, limit: 1, waitMs: 0, leaseMs: 30_000 }),
  },
  complete: {
    method: 'POST',
    path: (id) => `/v1/job/${id}/complete`,
    body: (lease) => ({ leaseToken: lease.leaseToken, result: { n: 1 } }),
  },
  fail: {
    method: 'POST',
    path: (id) => `/v1/job/${id}/fail`,
    body: (lease) => ({ leaseToken: lease.leaseToken, message: 'boom', permanent: false, errorName: 'Error' }),
  },
  extend: {
    method: 'POST',
    path: (id) => `/v1/job/${id}/extend`,
    body: (lease) => ({ leaseToken: lease.leaseToken, leaseMs: 30_000, workerId: 'fuzz' }),
  },
  snooze: {
    method: 'POST',
    path: (id) => `/v1/job/${id}/snooze`,
    body: (lease) => ({ leaseToken: lease.leaseToken, delayMs: 1_000 }),
  },
  retryAt: {
    method: 'POST',
    path: (id) => `/v1/job/${id}/snooze`,
    body: (lease) => ({ leaseToken: lease.leaseToken, runAt: new Date().toISOString() }),
  },
  rateLimited: {
    method: 'POST',
    path: (id) => `/v1/job/${id}/rate-limited`,
    body: (lease) => ({ leaseToken: lease.leaseToken, holdMs: 1_000 }),
  },
  cancel: { method: 'POST', path: (id) => `/v1/job/${id}/cancel` },
  status: { method: 'GET', path: (id) => `/v1/job/${id}` },
};

await describeEachStore(IN_PROCESS_STORES, 'bad input to more calls over $label', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;
  const { send, expectClientAnswer, expectEveryCallAnswered, expectStillServing, hold } = hostileTarget(
    () => server.url,
  );

  beforeAll(async () => {
    target = await open();
    const fuzzTypes = [HELD, ADMINISTERED].map((name) => ({ name, version: 1, jsonSchema: { type: 'object' } }));
    server = await startHostileServer(target.url, fuzzTypes);
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  const leaseFor = async (held: boolean): Promise<Lease> =>
    held ? hold(HELD, 1, { n: 1 }) : { id: crypto.randomUUID(), leaseToken: crypto.randomUUID() };

  it('answers any flow, held-job schedule or admin write over tRPC with a client error or success', async () => {
    await expectEveryCallAnswered(WRITES, leaseFor);
  });

  it('answers any read over tRPC with a client error or success', async () => {
    await expectEveryCallAnswered(READS, leaseFor);
  });

  it('answers any plain HTTP worker call with a client error or success', async () => {
    const call = fc.constantFrom(...Object.keys(ROUTES)).chain((route) =>
      fc.record({
        route: fc.constant(route),
        changes: editsOf(ROUTES[route]?.body?.({ id: '', leaseToken: 'token' }) ?? {}),
        edited: fc.boolean(),
        levels: depth,
        held: fc.boolean(),
        // The job's id in the path: the held job's, or text that is no id at all.
        oddId: fc.option(nasty.map(percentEncode), { freq: 3 }),
        contentType,
        token,
      }),
    );
    await fc.assert(
      fc.asyncProperty(call, async ({ route, changes, edited, levels, held, oddId, ...sent }) => {
        const { method, path, body: validBody } = ROUTES[route] as (typeof ROUTES)[string];
        const lease = await leaseFor(held);
        const body = validBody
          ? bodyText(edited ? applyEdits(validBody(lease), changes) : validBody(lease), levels)
          : undefined;
        const url = path(oddId ?? lease.id);
        expectClientAnswer(await send({ method, path: url, body, ...sent }), `${method} ${url} ${body?.slice(0, 300)}`);
      }),
      { numRuns: RUNS },
    );
    await expectStillServing();
  });

  /** The start of an event stream at `path`: its status and text, up to its first batch or a refusal, or 500 ms. */
  const streamStart = async (path: string, sent: { token?: string | undefined }) => {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), 500);
    const headers: Record<string, string> = sent.token === undefined ? {} : { authorization: `Bearer ${sent.token}` };
    try {
      const response = await fetch(`${server.url}${path}`, { headers, signal: stop.signal });
      let text = '';
      try {
        const reader = (response.body as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        while (!/\nid: |serialized-error/.test(text)) {
          const { done, value } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
      } catch (error) {
        if (!stop.signal.aborted) throw error;
      }
      return { status: response.status, text };
    } finally {
      clearTimeout(timer);
      stop.abort();
    }
  };

  it('answers any event subscription with a stream, a refusal in it, or a client error', async () => {
    const subscription = fc.record({
      changes: editsOf({ name: 'sendEmail', lastEventId: 'x' }),
      levels: fc.integer({ min: 60, max: 900 }),
      token,
    });
    await fc.assert(
      fc.asyncProperty(subscription, async ({ changes, levels, token: sentWith }) => {
        const input = bodyText({ json: applyEdits({ name: 'sendEmail', lastEventId: 'x' }, changes) }, levels);
        const path = `/trpc/events.watch?input=${encodeURIComponent(input)}`;
        const answer = await streamStart(path, { token: sentWith });
        expectClientAnswer(answer.status === 200 ? { ...answer, text: '' } : answer, path);
        // A refusal inside the stream is the client's error too, with a workq code, never the server's fault.
        if (answer.text.includes('serialized-error')) {
          expect(answer.text, path).toMatch(/"workqCode":"[A-Z_]+"/);
          expect(answer.text, path).not.toContain('INTERNAL_SERVER_ERROR');
        }
      }),
      { numRuns: RUNS / 4 },
    );
    await expectStillServing();
  });
});
