import { defineCatalog, defineJob } from '@workq/core';
import { type QueueServer, startServer } from '@workq/queue-server';
import { createClient, isWorkqError, WorkqError } from '@workq/sdk';
import { freshPostgresSchema, until } from '@workq/test-support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { collectingLogger } from '../support/quiet-logger.ts';
import type { FreshStore } from '../support/stores.ts';

const DAY_MS = 86_400_000;

const catalog = defineCatalog({
  /** Completed reports are dropped at the pruner's next run; failed ones follow the server-wide retention. */
  report: defineJob({
    version: 1,
    payload: z.object({ n: z.number() }),
    defaults: { maxAttempts: 1, retention: { completedMs: 0 } },
  }),
  plain: defineJob({ version: 1, payload: z.object({ n: z.number() }), defaults: { maxAttempts: 1 } }),
});

let target: FreshStore | undefined;
let server: QueueServer | undefined;

beforeAll(() => {
  target = freshPostgresSchema('workq_e2e');
});

afterAll(async () => {
  await server?.close();
  await target?.drop();
});

const open = async () =>
  startServer({ store: target?.url, port: 0, jobs: catalog, logger: collectingLogger(), pollIntervalMs: 200 });

it("prunes a job by its type's retention or its own, keeping the others, when the pruner runs", async () => {
  server = await open();
  let sdk = createClient({ url: server.url, jobs: catalog });
  const byType = await sdk.enqueue.report({ n: 1 });
  // Its own retention replaces the type's as a whole: naming only deadMs, it is kept once completed.
  const ownKept = await sdk.enqueue.report({ n: 2 }, { retention: { deadMs: 0 } });
  const [plainDropped, plainKept] = await sdk.enqueueMany.plain([{ n: 3 }, { n: 4 }], {
    perJob: [{ retention: { completedMs: 0 } }, undefined],
  });
  expect(await ownKept.status()).toMatchObject({ retention: { deadMs: 0 } });
  expect(await byType.status()).toMatchObject({ retention: { completedMs: 0 } });
  const workers = [sdk.consume('report', async () => undefined), sdk.consume('plain', async () => undefined)];
  try {
    for (const handle of [byType, ownKept, plainDropped, plainKept]) await handle?.result({ timeoutMs: 10_000 });
  } finally {
    await Promise.all(workers.map((worker) => worker.close()));
  }
  await server.close();

  // A server's pruner runs as it takes the lead, and then every minute.
  server = await open();
  sdk = createClient({ url: server.url, jobs: catalog });
  const gone = async (id: string) =>
    sdk.admin.job(id).then(
      () => false,
      (error: unknown) => isWorkqError(error, 'NOT_FOUND'),
    );
  await until(async () => (await gone(byType.id)) && (await gone(plainDropped!.id)), 10_000);
  expect(await sdk.admin.job(ownKept.id)).toMatchObject({ state: 'completed' });
  expect(await sdk.admin.job(plainKept!.id)).toMatchObject({ state: 'completed' });
});

it('refuses a retention out of bounds with VALIDATION naming the option, and enqueues nothing', async () => {
  server ??= await open();
  const sdk = createClient({ url: server.url, jobs: catalog });
  const before = (await sdk.admin.list({ name: 'plain' })).jobs.length;
  for (const retention of [{ completedMs: -1 }, { deadMs: 4000 * DAY_MS }, { completedMs: 0.5 }]) {
    const error = await sdk.enqueue.plain({ n: 9 }, { retention }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkqError);
    expect((error as WorkqError).code).toBe('VALIDATION');
    expect((error as WorkqError).message).toContain('retention');
  }
  expect((await sdk.admin.list({ name: 'plain' })).jobs).toHaveLength(before);
});

it("keeps a flow's jobs for the server-wide retention: a type's default stays out, one given is refused", async () => {
  server ??= await open();
  const sdk = createClient({ url: server.url, jobs: catalog });
  const parent = await sdk.enqueue.report({ n: 10 }, { children: [sdk.child.report({ n: 11 })] });
  const status = await sdk.admin.job(parent.id);
  expect(status).toMatchObject({ state: 'waiting-children' });
  expect(status.retention).toBeUndefined();
  const [child] = status.children ?? [];
  expect((await sdk.admin.job(child!.id)).retention).toBeUndefined();
  const refused = await sdk.enqueue
    .plain({ n: 12 }, { retention: { completedMs: 0 }, children: [sdk.child.plain({ n: 13 })] })
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(isWorkqError(refused, 'VALIDATION')).toBe(true);
  expect((refused as WorkqError).message).toContain('historyRetentionMs');
});
