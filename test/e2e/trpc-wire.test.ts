import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient } from '@workq/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectingLogger } from '../support/quiet-logger.ts';

/**
 * The server answers tRPC calls in tRPC's wire format, alone and in batches:
 * for the same call, a single mutation and a batch of one must answer with
 * the same status and the same bytes.
 */
describe('tRPC wire format of single mutations', () => {
  let server: QueueServer;
  const token = 'trpc-wire-e2e-secret';
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

  beforeAll(async () => {
    server = await startServer({
      store: 'pglite://memory',
      port: 0,
      logger: collectingLogger(),
      tokens: [{ token, scopes: ['produce:*', 'consume:*', 'register:*'] }],
      limits: { maxRequestBytes: 4096 },
    });
    await createClient({ url: server.url, jobs, token }).enqueue.sendEmail({
      to: 'a@example.com',
      subject: 's',
      body: '',
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** The same call, once alone and once as a batch of one; resolves to both answers. */
  async function bothWays(path: string, body: string, extraHeaders: Record<string, string> = {}) {
    const init = { method: 'POST', headers: { ...headers, ...extraHeaders } };
    const single = await fetch(`${server.url}/trpc/${path}`, { ...init, body });
    const batched = await fetch(`${server.url}/trpc/${path}?batch=1`, { ...init, body: `{"0":${body}}` });
    const batchedBody = (await batched.json()) as unknown[];
    return {
      single: { status: single.status, type: single.headers.get('content-type'), body: await single.text() },
      batched: { status: batched.status, body: JSON.stringify(batchedBody[0]) },
    };
  }

  const cases: [string, string, string, Record<string, string>?][] = [
    ['a claim that finds nothing', 'consumer.claim', '{"name":"sendEmail","maxVersion":1,"limit":1,"workerId":"w"}'],
    ['an input that fails its schema', 'jobs.enqueue', '{"name":"sendEmail","version":"one","payload":{}}'],
    ['a payload the registered schema refuses', 'jobs.enqueue', '{"name":"sendEmail","version":1,"payload":{"to":3}}'],
    ['an unknown job type', 'jobs.enqueue', '{"name":"nope","version":1,"payload":{}}'],
    ['a wrong token', 'jobs.enqueue', '{"name":"sendEmail","version":1,"payload":{}}', { authorization: 'Bearer x' }],
    ['a lease that is not held', 'consumer.complete', '{"items":[{"id":"no-such-job","leaseToken":"t"}]}'],
  ];

  it.each(cases)('answers %s alone with the same status and body as in a batch', async (_, path, body, extra) => {
    const { single, batched } = await bothWays(path, body, extra);
    expect(single.type).toBe('application/json');
    expect(single.status).toBe(batched.status);
    expect(single.body).toBe(batched.body);
  });

  it('refuses a body over maxRequestBytes with PAYLOAD_TOO_LARGE, and keeps serving', async () => {
    const payload = JSON.stringify({ to: 'a@example.com', subject: 'x'.repeat(5000), body: '' });
    const { single, batched } = await bothWays('jobs.enqueue', `{"name":"sendEmail","version":1,"payload":${payload}}`);
    expect(single.status).toBe(413);
    expect(batched.status).toBe(413);
    const error = JSON.parse(single.body) as { error: { json: { data: { workqCode: string } } } };
    expect(error.error.json.data.workqCode).toBe('PAYLOAD_TOO_LARGE');
    const handle = await createClient({ url: server.url, jobs, token }).enqueue.sendEmail({
      to: 'b@example.com',
      subject: 'after',
      body: '',
    });
    expect((await handle.status()).state).toBe('ready');
  });

  it('refuses a body that is not JSON as invalid, alone and in a batch', async () => {
    // JSON.parse names a position in its message, which differs inside a batch; status and code must not.
    const { single, batched } = await bothWays('jobs.enqueue', '{"name":"sendEmail",}');
    expect(single.status).toBe(400);
    expect(batched.status).toBe(400);
    const error = JSON.parse(single.body) as { error: { json: { data: { workqCode: string } } } };
    expect(error.error.json.data.workqCode).toBe('VALIDATION');
  });

  it('decodes only the inputs of the calls a batch holds', async () => {
    // Keyed past the batch's one call, a bigint too long to decode (4,096 digits at most) is never read.
    const stray = { json: '9'.repeat(5_000), meta: { values: ['bigint'], v: 1 } };
    const input = encodeURIComponent(JSON.stringify({ 1: stray }));
    const answer = await fetch(`${server.url}/trpc/schemas.list?batch=1&input=${input}`, { headers });
    expect(answer.status).toBe(200);
  });

  it('serves queries, refuses a query called as a mutation, and a path that does not decode', async () => {
    const listed = await fetch(`${server.url}/trpc/schemas.list`, { headers });
    expect(listed.status).toBe(200);
    const asMutation = await fetch(`${server.url}/trpc/schemas.list`, { method: 'POST', headers, body: '{}' });
    expect(asMutation.status).toBe(405);
    const undecodable = await fetch(`${server.url}/trpc/jobs.%E0%A4%A`, { method: 'POST', headers, body: '{}' });
    expect(undecodable.status).toBe(400);
  });
});
