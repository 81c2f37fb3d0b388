import { catalogJsonSchemas } from '@workq/core';
import { redactUrl } from '@workq/core/engine';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { startTcpProxy, type TcpProxy, until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { metric } from '../support/prometheus.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { rawClient, rawFailure } from '../support/raw-client.ts';
import { describeEachStore, type FreshStore, SERVER_STORES } from '../support/stores.ts';

const email = { to: 'a@example.com', subject: 'hello', body: 'hi' };

/** The same store URL, reached through `port` on this host (a proxy in front of the database). */
function throughPort(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}

/** How long this file's MongoDB URL lets a call wait for a reachable primary, then for a majority. */
const SELECTION_MS = 500;
const MAJORITY_MS = 1000;

/**
 * `url` with short waits for a reachable MongoDB primary and for a majority; any other URL as it is. A
 * MongoDB call waits up to `serverSelectionTimeoutMS` (15 s by default, to outlast an election) before it
 * fails, and an insert the store cannot finish is abandoned after that wait and `wtimeoutMS`: set shorter
 * in the URL, as an operator may, each call the outage fails here fails soon.
 */
function withShortWaits(url: string): string {
  const parsed = new URL(url);
  if (parsed.protocol !== 'mongodb:') return url;
  parsed.searchParams.set('serverSelectionTimeoutMS', String(SELECTION_MS));
  parsed.searchParams.set('wtimeoutMS', String(MAJORITY_MS));
  return parsed.toString();
}

/** How soon an enqueue the outage fails must be answered: the store's waits, and room for a loaded machine. */
const ANSWER_WITHIN_MS = SELECTION_MS + MAJORITY_MS + 3000;

/** `call`'s result and how long it took. */
async function timed<T>(call: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await call();
  return { result, ms: performance.now() - started };
}

/**
 * The stores a proxy can stand in front of. A MongoDB client connects to the replica set's members by the
 * addresses they announce in `hello`, so only a member told to announce the proxy's address is reached
 * through it: the wire double is, a real MongoDB here is not.
 */
const PROXIED_STORES = SERVER_STORES.filter((kind) => kind.label !== 'mongodb (real)');

await describeEachStore(PROXIED_STORES, 'a job store outage, over $label', ({ open }) => {
  let target: FreshStore | undefined;
  let proxy: TcpProxy | undefined;
  let server: QueueServer;
  let storeUrl: string;
  const logger = collectingLogger();

  const enqueueOverHttp = (idempotencyKey?: string) =>
    fetch(`${server.url}/v1/jobs/sendEmail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ version: 1, payload: email, ...(idempotencyKey ? { options: { idempotencyKey } } : {}) }),
    });
  const enqueueOverTrpc = (idempotencyKey: string) =>
    rawClient(server.url).jobs.enqueue.mutate({
      name: 'sendEmail',
      version: 1,
      payload: email,
      options: { idempotencyKey },
    });
  const readyStatus = async () => (await fetch(`${server.url}/readyz`)).status;
  const metrics = async () => (await fetch(`${server.url}/metrics`)).text();
  const outageLines = () =>
    logger.lines.filter((line) => line.message.startsWith('job store unreachable') || line.message.includes('again'));

  beforeAll(async () => {
    target = await open();
    const upstream = new URL(target.url);
    proxy = await startTcpProxy(upstream.hostname, Number(upstream.port));
    storeUrl = withShortWaits(throughPort(target.url, proxy.port));
    target.announce?.(`127.0.0.1:${proxy.port}`);
    server = await startServer({ store: storeUrl, port: 0, logger, pollIntervalMs: 200 });
    await rawClient(server.url).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  });

  afterAll(async () => {
    proxy?.restore();
    await server?.close();
    await proxy?.close();
    await target?.drop();
  });

  it('logs its start and end once each, counts it, says not ready meanwhile, answers enqueues soon, and loses or doubles no job', async () => {
    const before = await enqueueOverHttp();
    expect(before.status).toBe(201);
    expect(await readyStatus()).toBe(200);
    expect(metric(await metrics(), 'workq_store_up')).toBe(1);
    expect(metric(await metrics(), 'workq_store_outages_total')).toBe(0);

    // Enqueues the moment the connection drops, over plain HTTP and over tRPC, both through the claim
    // dispatcher; on MongoDB the first is written to a connection the driver has not yet seen close.
    proxy?.cut();
    const { result: failed, ms: httpMs } = await timed(() => enqueueOverHttp('outage-1'));
    expect(failed.status).toBe(503);
    expect(httpMs).toBeLessThan(ANSWER_WITHIN_MS);
    const { result: failedTrpc, ms: trpcMs } = await timed(() => rawFailure(enqueueOverTrpc('outage-trpc')));
    expect(failedTrpc.code).toBe('UNAVAILABLE');
    expect(failedTrpc.message).toContain('idempotencyKey');
    expect(trpcMs).toBeLessThan(ANSWER_WITHIN_MS);
    const body = (await failed.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('UNAVAILABLE');
    // A write cut off mid-way may have been stored: the answer must not promise otherwise.
    expect(body.error.message).not.toMatch(/nothing was changed/i);
    expect(body.error.message).toMatch(/unknown/);
    expect(body.error.message).toContain('idempotencyKey');

    await until(async () => (await readyStatus()) === 503, 10_000);
    // A read changed nothing, and says so.
    const read = await rawFailure(rawClient(server.url).jobs.get.query({ id: '00000000-0000-0000-0000-000000000001' }));
    expect(read.code).toBe('UNAVAILABLE');
    expect(read.message).toMatch(/nothing was changed/i);
    for (let i = 0; i < 3; i++) expect((await enqueueOverHttp(`outage-${i + 2}`)).status).toBe(503);
    const during = await metrics();
    expect(metric(during, 'workq_store_up')).toBe(0);
    expect(metric(during, 'workq_store_outages_total')).toBe(1);

    const started = outageLines();
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({ level: 'warn', fields: { store: redactUrl(storeUrl) } });

    proxy?.restore();
    await until(async () => (await readyStatus()) === 200, 15_000);
    const resent = await enqueueOverHttp('outage-1');
    expect(resent.status).toBeLessThan(300);
    const resentTrpc = await enqueueOverTrpc('outage-trpc');
    // Stored once each: the job from before the outage and the ones the cut-off writes may have stored.
    const claimed = await rawClient(server.url).consumer.claim.mutate({
      name: 'sendEmail',
      maxVersion: 1,
      limit: 10,
      workerId: 'after-outage',
    });
    const ids = [before, resent].map(async (response) => ((await response.json()) as { id: string }).id);
    const expected = [...(await Promise.all(ids)), resentTrpc.id];
    expect(claimed.jobs.map((job) => job.id).sort()).toEqual(expected.sort());
    expect(metric(await metrics(), 'workq_store_up')).toBe(1);
    expect(metric(await metrics(), 'workq_store_outages_total')).toBe(1);

    const lines = outageLines();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ level: 'info', fields: { store: redactUrl(storeUrl) } });
    const ended = lines[1]?.fields as { outageMs: number; failedRequests: number };
    expect(ended.outageMs).toBeGreaterThan(0);
    // The five enqueues and the read; readiness checks are not requests that failed.
    expect(ended.failedRequests).toBe(6);
  });
});
