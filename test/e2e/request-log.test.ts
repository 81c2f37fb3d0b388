import { WorkqError } from '@workq/core';
import { openStore, type Store } from '@workq/core/engine';
import { mintToken, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawHttp } from '../support/raw-http.ts';

const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };
const DATABASE_TEXT = 'relation "workq_jobs" does not exist (SQLSTATE 42P01)';

/** `store`, except that reading a job whose id starts with `fail-` fails as a database would, and `fail-unavailable-` as a store whose failure says "see the server log". */
function withFailures(store: Store): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== 'getJob') return value.bind(target);
      return async (id: string) => {
        if (id.startsWith('fail-unavailable-')) {
          throw new WorkqError('UNAVAILABLE', 'deadlock detected', {
            retryable: false,
            cause: new Error(DATABASE_TEXT),
          });
        }
        if (id.startsWith('fail-')) throw new Error(DATABASE_TEXT);
        return value.call(target, id);
      };
    },
  });
}

const getPath = (id: string) => `/trpc/jobs.get?input=${encodeURIComponent(JSON.stringify({ json: { id } }))}`;

describe('request ids and the 5xx log', () => {
  const logger = collectingLogger();
  let server: QueueServer;

  beforeAll(async () => {
    server = await startServer({ store: withFailures(await openStore('pglite://memory')), port: 0, jobs, logger });
  });

  afterAll(async () => {
    await server?.close();
  });

  const linesOf = (requestId: unknown) => logger.lines.filter((line) => line.fields?.requestId === requestId);

  it.each([
    ['a database error', 'fail-1'],
    ['a store failure that says "see the server log"', 'fail-unavailable-1'],
  ])(
    'logs %s answered 5xx exactly once, with the id the answer carries, and no database text in the answer',
    async (_, id) => {
      const answer = await rawHttp(server.url, { path: getPath(id) });
      expect(answer.status).toBeGreaterThanOrEqual(500);
      const requestId = answer.headers['x-request-id'];
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(answer.json).toMatchObject({ error: { json: { data: { requestId } } } });
      expect(answer.text).not.toContain('SQLSTATE');
      expect(answer.text).not.toContain('workq_jobs');
      await new Promise((resolve) => setTimeout(resolve, 50));
      const lines = linesOf(requestId);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        level: 'error',
        message: 'request failed',
        fields: {
          method: 'GET',
          path: '/trpc/jobs.get',
          status: answer.status,
          error: expect.stringContaining('SQLSTATE'),
        },
      });
    },
  );

  it('logs a 5xx in a tRPC batch once too', async () => {
    const input = encodeURIComponent(JSON.stringify({ 0: { json: { id: 'fail-2' } }, 1: { json: { id: 'fail-3' } } }));
    const answer = await rawHttp(server.url, { path: `/trpc/jobs.get,jobs.get?batch=1&input=${input}` });
    const requestId = answer.headers['x-request-id'];
    expect(answer.text).toContain(String(requestId));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(linesOf(requestId)).toHaveLength(1);
  });

  it('sends x-request-id on every answer, keeping a well-formed one the caller sent', async () => {
    for (const path of ['/healthz', '/nowhere', '/trpc/admin.queues', getPath('no-such-job')]) {
      const answer = await rawHttp(server.url, { path });
      expect(answer.headers['x-request-id'], path).toMatch(/^[0-9a-f-]{36}$/);
    }
    const kept = await rawHttp(server.url, { path: '/healthz', headers: { 'x-request-id': 'lb-7f3a.42:9' } });
    expect(kept.headers['x-request-id']).toBe('lb-7f3a.42:9');
    const replaced = await rawHttp(server.url, { path: '/healthz', headers: { 'x-request-id': 'not an id; at all' } });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('does not log the retryable end each open event stream gets when the server closes', async () => {
    const stream = await fetch(
      `${server.url}/trpc/events.watch?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`,
    );
    const requestId = stream.headers.get('x-request-id');
    const reader = stream.body?.getReader();
    await reader?.read();
    await server.close();
    let text = '';
    for (let chunk = await reader?.read(); chunk && !chunk.done; chunk = await reader?.read()) {
      text += new TextDecoder().decode(chunk.value);
    }
    expect(text).toContain('"workqCode":"UNAVAILABLE","retryable":true');
    expect(linesOf(requestId)).toEqual([]);
  });
});

describe('the audit trail', () => {
  const logger = collectingLogger();
  const SECRET = 'request-log-e2e-secret-0123456789abcdef';
  const ADMIN = 'request-log-admin-token-7d1e';
  const PRODUCER = 'request-log-producer-token-3c9a';
  let server: QueueServer;
  let signedAdmin: string;

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      jobs,
      tokens: [
        { token: ADMIN, scopes: ['admin'] },
        { token: PRODUCER, scopes: ['produce:sendEmail'] },
      ],
      tokenSecret: SECRET,
      logger,
    });
    signedAdmin = await mintToken({ secret: SECRET, scopes: ['admin'], expiresInMs: 600_000, subject: 'ops-alice' });
  });

  afterAll(async () => {
    await server?.close();
  });

  const audit = (kind: string) => logger.lines.filter((line) => line.fields?.audit === kind);

  it('logs each admin action with subject, action and target, alone and in a batch', async () => {
    const sdk = createClient({ url: server.url, jobs, token: signedAdmin });
    await sdk.admin.pause('imageConvert');
    const batch = await fetch(`${server.url}/trpc/admin.resume?batch=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ 0: { json: { name: 'imageConvert' } } }),
    });
    expect(batch.status).toBe(200);
    await sdk.admin.removeSchedule('no-such-schedule');
    const actions = audit('admin-action');
    expect(actions.map((line) => line.message)).toEqual([
      'admin.pause imageConvert',
      'admin.resume imageConvert',
      'admin.removeSchedule schedule no-such-schedule',
    ]);
    expect(actions[0]?.fields).toMatchObject({
      subject: 'ops-alice',
      action: 'admin.pause',
      target: 'imageConvert',
      outcome: 'ok',
      remoteAddress: expect.any(String),
      requestId: expect.any(String),
    });
    expect(actions[1]?.fields?.subject).toBeUndefined();
  });

  it('logs each refusal for who sent it, on tRPC, plain HTTP, metrics and the event stream', async () => {
    const before = audit('auth-failure').length;
    expect((await fetch(`${server.url}/trpc/admin.queues`)).status).toBe(401);
    const forbidden = await fetch(`${server.url}/trpc/admin.pause`, {
      method: 'POST',
      headers: { authorization: `Bearer ${PRODUCER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { name: 'imageConvert' } }),
    });
    expect(forbidden.status).toBe(403);
    const rest = await fetch(`${server.url}/v1/jobs/sendEmail`, {
      method: 'POST',
      headers: { authorization: 'Bearer not-a-real-token-for-this-test', 'content-type': 'application/json' },
      body: JSON.stringify({ version: 1, payload: email }),
    });
    expect(rest.status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${PRODUCER}` } })).status).toBe(
      403,
    );
    const stream = await fetch(
      `${server.url}/trpc/events.watch?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`,
    );
    await stream.text();
    const refusals = audit('auth-failure').slice(before);
    expect(refusals.map((line) => [line.fields?.action, line.fields?.reason])).toEqual([
      ['admin.queues', 'UNAUTHORIZED'],
      ['admin.pause', 'FORBIDDEN'],
      ['POST /v1/jobs/sendEmail', 'UNAUTHORIZED'],
      ['GET /metrics', 'FORBIDDEN'],
      ['events.watch', 'UNAUTHORIZED'],
    ]);
    expect(refusals[1]?.fields).toMatchObject({ detail: expect.stringContaining('admin'), remoteAddress: '127.0.0.1' });
    expect(audit('admin-action').some((line) => line.fields?.outcome !== 'ok')).toBe(false);
    const text = JSON.stringify(logger.lines);
    for (const secret of [ADMIN, PRODUCER, 'not-a-real-token-for-this-test', signedAdmin, 'Bearer ']) {
      expect(text).not.toContain(secret);
    }
  });
});
