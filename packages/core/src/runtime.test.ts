import { expect, it } from 'vitest';
import { closedAfterEach } from '../test/support/fixtures.ts';
import type { EventBatch } from './notify/event-hub.ts';
import { createQueueRuntime, type QueueRuntime } from './runtime.ts';
import { createPgliteStore } from './stores/postgres/index.ts';

const open = closedAfterEach<QueueRuntime>();

const dispatcher = { pollIntervalMs: 5_000, maxWaitMs: 10_000, maxBatchSize: 100 };

it('composes the queue over one store: a lone enqueue reaches a waiting claim, and its event the hub', async () => {
  const runtime = await createQueueRuntime({ store: await createPgliteStore(), dispatcher });
  open.push(runtime);
  runtime.start();
  const events = new AbortController();
  const batches = runtime.events.subscribe({ wants: () => true, signal: events.signal })[Symbol.asyncIterator]();
  await batches.next();
  const claim = { name: 'composed', minVersion: 1, maxVersion: 1, limit: 1, workerId: 'w', host: 'h', waitMs: 5_000 };
  const waiting = runtime.dispatcher.claim({ ...claim, acks: [] }, new AbortController().signal);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const [enqueued] = await runtime.dispatcher.enqueue([{ name: 'composed', version: 1, payload: {} }]);
  expect((await waiting).jobs.map((job) => job.id)).toEqual([enqueued?.id]);
  const { value } = (await batches.next()) as IteratorResult<EventBatch>;
  expect((value as EventBatch).runs.map((run) => ('ids' in run ? [run.type, run.ids] : run.type))).toContainEqual([
    'enqueued',
    [enqueued?.id],
  ]);
  events.abort();
});

it('closes once, in order: waiting claims answer, then `drain` runs, then the store closes', async () => {
  const store = await createPgliteStore();
  const runtime = await createQueueRuntime({ store, dispatcher });
  runtime.start();
  const claim = { name: 'closing', minVersion: 1, maxVersion: 1, limit: 1, workerId: 'w', host: 'h', waitMs: 8_000 };
  const waiting = runtime.dispatcher.claim({ ...claim, acks: [] }, new AbortController().signal);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const order: string[] = [];
  void waiting.then(() => order.push('claim answered'));
  const closed = runtime.close(async () => {
    await waiting;
    order.push('drain');
    await store.ping();
  });
  expect(runtime.close()).toBe(closed);
  await closed;
  expect(order).toEqual(['claim answered', 'drain']);
  await expect(store.ping()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
});
