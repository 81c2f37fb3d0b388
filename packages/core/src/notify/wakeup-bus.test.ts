import { afterAll, beforeAll, expect, it } from 'vitest';
import { closedAfterEach } from '../../test/support/fixtures.ts';
import { createEngine, type Engine } from '../engine/engine.ts';
import type { Store, StoreNotifier } from '../engine/store.ts';
import { createPgliteStore } from '../stores/postgres/index.ts';
import { WakeupBus } from './wakeup-bus.ts';

/** One store's notifications: every subscriber hears every message, its own too, as LISTEN/NOTIFY delivers them. */
function sharedNotifier(): StoreNotifier & { published: string[] } {
  const listeners = new Set<(message: string) => void>();
  const published: string[] = [];
  return {
    published,
    async publish(message) {
      published.push(message);
      for (const listener of listeners) queueMicrotask(() => listener(message));
    },
    async subscribe(listener) {
      listeners.add(listener);
      return async () => {
        listeners.delete(listener);
      };
    },
  };
}

let store: Store;
const started = closedAfterEach<WakeupBus>();

beforeAll(async () => {
  store = await createPgliteStore();
});

afterAll(() => store?.close());

/** A server instance's engine and wake-ups on the shared store. */
async function instance(notifier: StoreNotifier): Promise<{ engine: Engine; wakeups: WakeupBus }> {
  const engine = createEngine({ store, leaseSweepIntervalMs: 0 });
  const wakeups = new WakeupBus(engine, notifier);
  await wakeups.start();
  started.push(wakeups);
  return { engine, wakeups };
}

/** Enqueues, claims and completes one job through `engine`; resolves to its id. */
async function finishOne(engine: Engine, name: string): Promise<string> {
  const { id } = await engine.enqueue({ name, version: 1, payload: {} });
  const [job] = await engine.claim({ name, maxVersion: 1, limit: 1, workerId: 'w' });
  expect(job?.id).toBe(id);
  await engine.complete({ id, leaseToken: job?.leaseToken as string });
  return id;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 60));
const finishedParts = (published: string[]) =>
  published.flatMap((message) => message.split('\n')).filter((part) => part.startsWith('finished:'));

it('publishes the jobs it finishes only while another instance has result requests waiting', async () => {
  const notifier = sharedNotifier();
  const a = await instance(notifier);
  const b = await instance(notifier);

  await finishOne(b.engine, 'unwatched');
  await settle();
  expect(finishedParts(notifier.published)).toEqual([]);

  // A waits for a job that B will finish: A says so, and B publishes the job once it finishes.
  const { id } = await b.engine.enqueue({ name: 'watched', version: 1, payload: {} });
  const waitedAt = Date.now();
  const finished = a.wakeups.waitForFinish(id, 10_000, new AbortController().signal);
  await settle();
  const [job] = await b.engine.claim({ name: 'watched', maxVersion: 1, limit: 1, workerId: 'w' });
  await b.engine.complete({ id, leaseToken: job?.leaseToken as string });
  await finished;
  expect(Date.now() - waitedAt).toBeLessThan(5_000);
  expect(finishedParts(notifier.published)).toEqual([`finished:${id}`]);
});

it('does not publish the jobs it finishes for result requests waiting on itself: its own events wake them', async () => {
  const notifier = sharedNotifier();
  const alone = await instance(notifier);
  const { id } = await alone.engine.enqueue({ name: 'own', version: 1, payload: {} });
  const finished = alone.wakeups.waitForFinish(id, 10_000, new AbortController().signal);
  await settle();
  expect(notifier.published.some((message) => message.includes('watching:'))).toBe(true);

  const [job] = await alone.engine.claim({ name: 'own', maxVersion: 1, limit: 1, workerId: 'w' });
  await alone.engine.complete({ id, leaseToken: job?.leaseToken as string });
  await finished;
  await settle();
  expect(finishedParts(notifier.published)).toEqual([]);
});

it('skips its own messages, since its own events woke its waiters already, and acts on those of others', async () => {
  const notifier = sharedNotifier();
  const a = await instance(notifier);
  const b = await instance(notifier);
  await a.engine.enqueue({ name: 'echo', version: 1, payload: {} });
  await settle();
  expect(notifier.published.some((message) => message.split('\n').includes('echo'))).toBe(true);
  expect([a.wakeups.generation('echo'), b.wakeups.generation('echo')]).toEqual([1, 1]);
});

it('sends job events to the other instances only while one of them has subscribers, and says when it dropped some', async () => {
  const notifier = sharedNotifier();
  const a = await instance(notifier);
  const b = await instance(notifier);
  const heard: (string[] | 'lost')[] = [];
  b.wakeups.onEvents((events) => heard.push(events === 'lost' ? 'lost' : events.map((e) => e.id)));
  const event = (id: string) => ({ type: 'enqueued' as const, id, name: 'mail', version: 1, at: new Date() });

  a.wakeups.sendEvents([event('unheard')]);
  await settle();
  expect(heard).toEqual([]);
  expect(notifier.published.some((message) => message.includes('event:'))).toBe(false);

  let listening = true;
  b.wakeups.announceListening(() => listening);
  await settle();
  expect(a.wakeups.othersListening).toBe(true);
  a.wakeups.sendEvents([event('e1'), event('e2')]);
  await settle();
  expect(heard).toEqual([['e1', 'e2']]);

  a.wakeups.sendEvents(Array.from({ length: 6_000 }, (_, i) => event(`x${i}`)));
  await settle();
  expect(heard.at(-1)).toBe('lost');
  listening = false;
});

it("keeps a job's events in order across instances when the store makes an earlier publish visible later", async () => {
  // As MySQL's polled table does: a publish is seen by others when it is stored, and stores can finish in any order.
  const notifier = sharedNotifier();
  const visibleAfterMs = [120, 0];
  const storeInAnyOrder: StoreNotifier = {
    subscribe: (listener) => notifier.subscribe(listener),
    publish: async (message) => {
      await new Promise((resolve) => setTimeout(resolve, visibleAfterMs.shift() ?? 0));
      await notifier.publish(message);
    },
  };
  const a = await instance(storeInAnyOrder);
  const b = await instance(notifier);
  const heard: string[] = [];
  b.wakeups.onEvents((events) => {
    if (events !== 'lost') heard.push(...events.map((e) => e.type));
  });
  b.wakeups.announceListening(() => true);
  await settle();
  const event = (type: 'started' | 'completed') => ({ type, id: 'j1', name: 'mail', version: 1, at: new Date() });
  a.wakeups.sendEvents([event('started')]);
  await new Promise((resolve) => setTimeout(resolve, 40));
  a.wakeups.sendEvents([event('completed')]);
  await new Promise((resolve) => setTimeout(resolve, 250));
  expect(heard).toEqual(['started', 'completed']);
});

it('tells the other instances which type lost a registered schema, and every type after a resync', async () => {
  const notifier = sharedNotifier();
  const { wakeups: remover } = await instance(notifier);
  const { wakeups: other } = await instance(notifier);
  const heard: (string | undefined)[] = [];
  const heardHere: (string | undefined)[] = [];
  other.onSchemasChanged((name) => heard.push(name));
  remover.onSchemasChanged((name) => heardHere.push(name));

  remover.announceSchemasChanged('imageConvert');
  remover.announceSchemasChanged('sendEmail');
  await settle();
  expect(heard).toEqual(['imageConvert', 'sendEmail']);
  // The instance that removed it already forgot; its own notification is skipped.
  expect(heardHere).toEqual([]);

  await notifier.publish('*');
  await settle();
  expect(heard).toEqual(['imageConvert', 'sendEmail', undefined]);
});
