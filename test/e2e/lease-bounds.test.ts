import { LEASE_MS_LIMITS } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectNoLeak } from '../support/leaks.ts';
import { collectingLogger } from '../support/quiet-logger.ts';
import { type RawClient, rawClient, rawFailure } from '../support/raw-client.ts';
import { describeEachStore, E2E_STORES, type FreshStore, serverStore } from '../support/stores.ts';

const TOKENS = [
  { token: 'root-token-0123456789', scopes: ['admin'] },
  { token: 'prod-token-0123456789', scopes: ['produce:*'] },
  { token: 'work-token-0123456789', scopes: ['consume:*'] },
];
const email = { to: 'a@example.com', subject: 'lease', body: 'bounds' };
/** Lease lengths no client may set: a lease to the year 287453, and one that lapses before the worker holds it. */
const OUT_OF_BOUNDS_LEASES_MS = [8_640_000_000_000_000, LEASE_MS_LIMITS.max + 1, LEASE_MS_LIMITS.min - 1, 0];
const BOUNDS_MESSAGE = /leaseMs: must be an integer from 100 to 86400000 \(100 ms to 24 h\)/;

await describeEachStore(E2E_STORES, 'lease lengths through the server on the $label store', ({ open }) => {
  let target: FreshStore | undefined;
  let server: QueueServer;
  let admin: RawClient;
  let work: RawClient;

  beforeAll(async () => {
    target = await open();
    server = await startServer({
      store: await serverStore(target),
      port: 0,
      jobs,
      tokens: TOKENS,
      logger: collectingLogger(),
    });
    admin = rawClient(server.url, 'root-token-0123456789');
    work = rawClient(server.url, 'work-token-0123456789');
  });

  afterAll(async () => {
    await server?.close();
    await target?.drop();
  });

  it('refuses a lease length out of bounds on enqueue (tRPC and HTTP), claim and extend, changing nothing', async () => {
    const { id } = await admin.jobs.enqueue.mutate({ name: 'sendEmail', version: 1, payload: email });
    const claim = (leaseMs?: number) =>
      work.consumer.claim.mutate({ name: 'sendEmail', maxVersion: 1, limit: 1, workerId: 'raw', leaseMs });
    for (const leaseMs of OUT_OF_BOUNDS_LEASES_MS) {
      const enqueued = await rawFailure(
        admin.jobs.enqueue.mutate({ name: 'sendEmail', version: 1, payload: email, options: { leaseMs } }),
      );
      expect(enqueued.code).toBe('VALIDATION');
      expect(enqueued.message).toMatch(BOUNDS_MESSAGE);

      const response = await fetch(`${server.url}/v1/jobs/sendEmail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer prod-token-0123456789' },
        body: JSON.stringify({ version: 1, payload: email, options: { leaseMs } }),
      });
      const text = await response.text();
      expect(response.status).toBe(400);
      expect(JSON.parse(text).error).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringMatching(/must be an integer from 100 to 86400000 \(100 ms to 24 h\)/),
      });
      expectNoLeak(text);

      const claimed = await rawFailure(claim(leaseMs));
      expect(claimed.code).toBe('VALIDATION');
      expect(claimed.message).toMatch(BOUNDS_MESSAGE);
    }
    expect(await admin.jobs.get.query({ id })).toMatchObject({ state: 'ready', attempts: 0 });
    expect((await admin.admin.queues.query()).find((queue) => queue.name === 'sendEmail')?.counts).toMatchObject({
      ready: 1,
    });

    const before = Date.now();
    const [held] = (await claim(LEASE_MS_LIMITS.max)).jobs;
    expect(held?.id).toBe(id);
    expect(held!.leaseExpiresAtMs).toBeGreaterThanOrEqual(before + LEASE_MS_LIMITS.max);
    const lease = { id, leaseToken: held!.leaseToken };
    for (const leaseMs of OUT_OF_BOUNDS_LEASES_MS) {
      const extended = await rawFailure(work.consumer.extend.mutate({ items: [{ ...lease, leaseMs }] }));
      expect(extended.code).toBe('VALIDATION');
      expect(extended.message).toMatch(BOUNDS_MESSAGE);
    }
    expect((await admin.jobs.get.query({ id })).leaseExpiresAt).toEqual(new Date(held!.leaseExpiresAtMs));
    await work.consumer.complete.mutate({ items: [{ ...lease, result: { messageId: 'm' } }] });
  });
});
