import { catalogJsonSchemas } from '@workq/core';
import { redactUrl } from '@workq/core/engine';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { startTcpProxy, type TcpProxy, until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
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

/** The value of one unlabelled metric in Prometheus text. */
function metric(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/**
 * The stores reached through one TCP connection target, which a proxy can cut. A MongoDB client finds the
 * replica set's members by the addresses they advertise, around any proxy, so MongoDB is not among them.
 */
const PROXIED_STORES = SERVER_STORES.filter((kind) => !kind.label.startsWith('mongodb'));

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
  const readyStatus = async () => (await fetch(`${server.url}/readyz`)).status;
  const metrics = async () => (await fetch(`${server.url}/metrics`)).text();
  const outageLines = () =>
    logger.lines.filter((line) => line.message.startsWith('job store unreachable') || line.message.includes('again'));

  beforeAll(async () => {
    target = await open();
    const upstream = new URL(target.url);
    proxy = await startTcpProxy(upstream.hostname, Number(upstream.port));
    storeUrl = throughPort(target.url, proxy.port);
    server = await startServer({ store: storeUrl, port: 0, logger, pollIntervalMs: 200 });
    await rawClient(server.url).schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) });
  });

  afterAll(async () => {
    proxy?.restore();
    await server?.close();
    await proxy?.close();
    await target?.drop();
  });

  it('logs its start and end once each, counts it, and says not ready meanwhile', async () => {
    expect((await enqueueOverHttp()).status).toBe(201);
    expect(await readyStatus()).toBe(200);
    expect(metric(await metrics(), 'workq_store_up')).toBe(1);
    expect(metric(await metrics(), 'workq_store_outages_total')).toBe(0);

    proxy?.cut();
    const failed = await enqueueOverHttp('outage-1');
    expect(failed.status).toBe(503);
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
    expect((await enqueueOverHttp('outage-1')).status).toBeLessThan(300);
    expect(metric(await metrics(), 'workq_store_up')).toBe(1);
    expect(metric(await metrics(), 'workq_store_outages_total')).toBe(1);

    const lines = outageLines();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ level: 'info', fields: { store: redactUrl(storeUrl) } });
    const ended = lines[1]?.fields as { outageMs: number; failedRequests: number };
    expect(ended.outageMs).toBeGreaterThan(0);
    // The four enqueues and the read; readiness checks are not requests that failed.
    expect(ended.failedRequests).toBe(5);
  });
});
