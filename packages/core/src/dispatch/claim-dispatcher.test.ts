import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { closedAfterEach } from '../../test/support/fixtures.ts';
import { createEngine, type Engine, type EngineOptions } from '../engine/engine.ts';
import type { CompleteAndClaim, Store } from '../engine/store.ts';
import { WakeupBus } from '../notify/wakeup-bus.ts';
import { createPgliteStore } from '../stores/postgres/index.ts';
import { ClaimDispatcher, type ClaimRoom, type DispatchedClaim } from './claim-dispatcher.ts';

let store: Store;
const running = closedAfterEach<WakeupBus>();

beforeAll(async () => {
  store = await createPgliteStore();
});
afterAll(() => store?.close());

/** The same store without its `handoff`: a store that cannot hand jobs over. */
const withoutHandoffs = (inner: Store): Store => Object.assign(Object.create(inner) as Store, { handoff: undefined });

async function dispatcherOver(over: Store, options: Partial<EngineOptions> = {}) {
  const engine: Engine = createEngine({ ...options, store: over });
  const bus = new WakeupBus(engine, undefined);
  await bus.start();
  running.push(bus);
  const delivered: { name: string; count: number; handedOver: boolean }[] = [];
  const presenceFailures: unknown[] = [];
  let queries = 0;
  const dispatcher = new ClaimDispatcher(engine, bus, {
    pollIntervalMs: options.clock ? 20 : 5_000,
    maxWaitMs: 10_000,
    maxBatchSize: 100,
    observer: {
      delivered: (name, count, handedOver) => delivered.push({ name, count, handedOver }),
      presenceFailed: (error) => presenceFailures.push(error),
      claimAttempt: (_name, queried) => {
        if (queried) queries++;
      },
    },
  });
  return { engine, dispatcher, delivered, presenceFailures, queries: () => queries };
}

/** `inner`, logging its acks' and limited claims' calls, and with or without its `completeAndClaim`. */
function loggingAcksAndClaims(inner: Store, completeAndClaim: boolean): { store: Store; calls: string[] } {
  const calls: string[] = [];
  const together = completeAndClaim ? inner.completeAndClaim : undefined;
  const store: Store = Object.assign(Object.create(inner) as Store, {
    completeJobs: (...args: Parameters<Store['completeJobs']>) => {
      calls.push('completeJobs');
      return inner.completeJobs(...args);
    },
    claimLimitedJobs: (...args: Parameters<Store['claimLimitedJobs']>) => {
      calls.push('claimLimitedJobs');
      return inner.claimLimitedJobs(...args);
    },
    completeAndClaim: together && {
      completeAndClaimLimitedJobs: (...args: Parameters<CompleteAndClaim['completeAndClaimLimitedJobs']>) => {
        calls.push('completeAndClaimLimitedJobs');
        return together.completeAndClaimLimitedJobs(...args);
      },
    },
  });
  return { store, calls };
}

let claims = 0;
const claimOf = (name: string, overrides: Partial<DispatchedClaim> = {}): DispatchedClaim => ({
  name,
  minVersion: 1,
  maxVersion: 1,
  limit: 5,
  workerId: `worker-${++claims}`,
  host: 'test',
  waitMs: 8_000,
  acks: [],
  ...overrides,
});
const listening = () => new AbortController().signal;

describe('ClaimDispatcher', () => {
  it('hands a lone enqueue to a waiting claim, in the insert, where the store can', async () => {
    const { dispatcher, delivered } = await dispatcherOver(store);
    const waiting = dispatcher.claim(claimOf('handed'), listening());
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [enqueued] = await dispatcher.enqueue([{ name: 'handed', version: 1, payload: { n: 1 } }]);
    const answer = await waiting;
    expect(answer.jobs.map((job) => job.id)).toEqual([enqueued?.id]);
    expect(delivered).toEqual([{ name: 'handed', count: 1, handedOver: true }]);
  });

  it('without handoffs, the same dispatcher wakes the waiting claim, which claims the job', async () => {
    const { dispatcher, delivered } = await dispatcherOver(withoutHandoffs(store));
    const startedAt = Date.now();
    const waiting = dispatcher.claim(claimOf('woken'), listening());
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [enqueued] = await dispatcher.enqueue([{ name: 'woken', version: 1, payload: { n: 1 } }]);
    const answer = await waiting;
    expect(answer.jobs.map((job) => job.id)).toEqual([enqueued?.id]);
    expect(Date.now() - startedAt).toBeLessThan(4_000);
    expect(delivered).toEqual([{ name: 'woken', count: 1, handedOver: false }]);
  });

  it('answers at once when its carried acks found their leases lost, and when its worker stops waiting', async () => {
    const { engine, dispatcher } = await dispatcherOver(store);
    const { id } = await engine.enqueue({ name: 'acks', version: 1, payload: {} });
    const [held] = await engine.claim({ name: 'acks', maxVersion: 1, limit: 1, workerId: 'w' });
    await engine.complete({ id, leaseToken: held?.leaseToken as string });
    const startedAt = Date.now();
    const stale = { id, leaseToken: 'not-the-lease', result: null };
    expect(await dispatcher.claim(claimOf('acks', { acks: [stale] }), listening())).toEqual({
      jobs: [],
      completed: [],
      acksFailed: false,
      concurrencyLimited: false,
    });
    expect(Date.now() - startedAt).toBeLessThan(4_000);

    const closing = claimOf('acks');
    const waiting = dispatcher.claim(closing, listening());
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(dispatcher.stopWaiting(closing.workerId, { covers: (name) => name === 'acks' })).toBe(1);
    expect((await waiting).jobs).toEqual([]);
    expect(Date.now() - startedAt).toBeLessThan(4_000);
  });

  for (const [limit, completeAndClaim] of [
    ['concurrency', true],
    ['concurrency', false],
    ['groupConcurrency', true],
    ['groupConcurrency', false],
  ] as const) {
    it(`under a ${limit} limit, a claim carrying the acks of the type's active jobs leases the places they free at its first query (${completeAndClaim ? 'in one store call with them' : 'after they commit'})`, async () => {
      const name = `carried-${limit}-${completeAndClaim}`;
      const { store: logged, calls } = loggingAcksAndClaims(store, completeAndClaim);
      await store.updateQueueSettings(
        name,
        limit === 'concurrency' ? { concurrency: 2 } : { groupConcurrency: 1 },
        new Date(),
      );
      const { engine, dispatcher, queries } = await dispatcherOver(logged);
      // Under `groupConcurrency: 1`, two groups of two: one job of each group at a time.
      const grouped = limit === 'groupConcurrency';
      await engine.enqueueMany(
        [1, 2, 3, 4].map((n) => ({ name, version: 1, payload: { n }, options: grouped ? { group: `g${n % 2}` } : {} })),
      );
      const held = await engine.claim({ name, maxVersion: 1, limit: 5, workerId: 'w' });
      expect(held).toHaveLength(2);
      calls.length = 0;

      const acks = held.map((job) => ({ id: job.id, leaseToken: job.leaseToken, result: null }));
      const answer = await dispatcher.claim(claimOf(name, { limit: 2, acks }), listening());
      // Only a concurrency limit asks the worker to hold no more jobs than it runs.
      expect(answer).toMatchObject({ acksFailed: false, concurrencyLimited: limit === 'concurrency' });
      expect([...answer.completed].sort()).toEqual(acks.map((ack) => ack.id).sort());
      expect(answer.jobs).toHaveLength(2);
      // Neither found the type full nor waited for a wake-up: one query, which the acks' places were free to.
      expect(queries()).toBe(1);
      expect(calls).toEqual(completeAndClaim ? ['completeAndClaimLimitedJobs'] : ['completeJobs', 'claimLimitedJobs']);
    });
  }

  for (const limited of [false, true]) {
    it(`tells a claim's acks settled once they are stored, while it waits on for work (${limited ? 'carried by its first query, under a concurrency limit' : 'stored beside its first query'})`, async () => {
      const name = `settled-${limited}`;
      if (limited) await store.updateQueueSettings(name, { concurrency: 5 }, new Date());
      const { engine, dispatcher } = await dispatcherOver(store);
      await engine.enqueueMany([1, 2].map((n) => ({ name, version: 1, payload: { n } })));
      const held = await engine.claim({ name, maxVersion: 1, limit: 2, workerId: 'w' });
      const acks = held.map((job) => ({ id: job.id, leaseToken: job.leaseToken, result: { n: job.id } }));
      const told: (readonly string[])[] = [];
      const closing = claimOf(name, { acks, acksSettled: (completed) => told.push(completed) });
      const waiting = dispatcher.claim(closing, listening());
      await vi.waitFor(() => expect(told).toHaveLength(1), { timeout: 5_000 });
      expect([...(told[0] ?? [])].sort()).toEqual(acks.map((ack) => ack.id).sort());
      for (const ack of acks) expect(await engine.get(ack.id)).toMatchObject({ state: 'completed' });
      // Still waiting for work: the acks' outcomes came first.
      expect(dispatcher.stopWaiting(closing.workerId, { covers: (n) => n === name })).toBe(1);
      const answer = await waiting;
      expect([...answer.completed].sort()).toEqual([...(told[0] ?? [])].sort());
      expect(told).toHaveLength(1);
    });
  }

  it('tells nothing settled for a claim that carries no acks', async () => {
    const { dispatcher } = await dispatcherOver(store);
    const told: unknown[] = [];
    const answer = await dispatcher.claim(
      claimOf('settled-none', { waitMs: 0, acksSettled: (completed) => told.push(completed) }),
      listening(),
    );
    expect(answer.jobs).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(told).toEqual([]);
  });

  it('leases no more than its room grants, and tells the room what each attempt and each handoff leased', async () => {
    const { engine, dispatcher } = await dispatcherOver(store);
    const log: string[] = [];
    const room = (granted: number): ClaimRoom => ({
      reserve: async (limit) => {
        log.push(`reserve ${limit}`);
        return granted;
      },
      leased: (jobs) => log.push(`leased ${jobs.length}`),
    });
    await engine.enqueueMany([1, 2, 3, 4, 5].map((n) => ({ name: 'roomy', version: 1, payload: { n } })));
    const answer = await dispatcher.claim(claimOf('roomy', { limit: 5, room: room(2) }), listening());
    expect(answer.jobs).toHaveLength(2);
    expect(log).toEqual(['reserve 5', 'leased 2']);

    log.length = 0;
    const waiting = dispatcher.claim(claimOf('roomy-handed', { room: room(5) }), listening());
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The attempt that found nothing gave its room back before the claim parked.
    expect(log).toEqual(['reserve 5', 'leased 0']);
    await dispatcher.enqueue([{ name: 'roomy-handed', version: 1, payload: { n: 1 } }]);
    expect((await waiting).jobs).toHaveLength(1);
    expect(log).toEqual(['reserve 5', 'leased 0', 'leased 1']);
  });

  it('answers with no jobs when no room comes before its wait ends, and completes the acks it carries', async () => {
    const { engine, dispatcher } = await dispatcherOver(store);
    const waits: number[] = [];
    const stopped: string[] = [];
    // Room that never comes: the reserve ends with none when the claim's wait does.
    const noRoom: ClaimRoom = {
      reserve: (_limit, _signal, wait) =>
        new Promise((resolve) => {
          waits.push(wait.ms);
          const timer = setTimeout(() => resolve(0), wait.ms);
          wait.stop.addEventListener('abort', () => {
            clearTimeout(timer);
            stopped.push('stop');
            resolve(0);
          });
        }),
      leased: () => undefined,
    };
    const [first, second] = await engine.enqueueMany(
      [1, 2].map((n) => ({ name: 'roomless', version: 1, payload: { n } })),
    );
    const [held] = await engine.claim({ name: 'roomless', maxVersion: 1, limit: 1, workerId: 'w' });
    const ack = { id: held?.id as string, leaseToken: held?.leaseToken as string, result: null };
    const startedAt = Date.now();
    const answer = await dispatcher.claim(claimOf('roomless', { waitMs: 200, acks: [ack], room: noRoom }), listening());
    expect(answer).toMatchObject({ jobs: [], completed: [held?.id], acksFailed: false });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(150);
    expect(waits[0]).toBeGreaterThan(150);
    expect(waits[0]).toBeLessThanOrEqual(200);
    const left = held?.id === first?.id ? second : first;
    expect(await engine.get(left?.id as string)).toMatchObject({ state: 'ready', attempts: 0 });

    // Its worker asking it to stop waiting ends the wait for room too.
    const closing = claimOf('roomless', { waitMs: 60_000, room: noRoom });
    const waiting = dispatcher.claim(closing, listening());
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(dispatcher.stopWaiting(closing.workerId, { covers: (name) => name === 'roomless' })).toBe(1);
    expect((await waiting).jobs).toEqual([]);
    expect(stopped).toEqual(['stop']);
  });

  it('puts back, unstarted, the jobs of a claim whose client went away', async () => {
    const { engine, dispatcher, delivered } = await dispatcherOver(store);
    const { id } = await engine.enqueue({ name: 'gone', version: 1, payload: {} });
    const client = new AbortController();
    client.abort();
    expect((await dispatcher.claim(claimOf('gone', { waitMs: 0 }), client.signal)).jobs).toEqual([]);
    expect(await engine.get(id)).toMatchObject({ state: 'ready', attempts: 0 });
    expect(delivered).toEqual([]);
  });

  it("ends a claim's wait at its deadline by the engine's clock, not the system's", async () => {
    let nowMs = Date.parse('2026-01-01T00:00:00.000Z');
    const { dispatcher } = await dispatcherOver(store, { clock: { now: () => new Date(nowMs) } });
    const waiting = dispatcher.claim(claimOf('deadline', { waitMs: 60_000 }), listening());
    await new Promise((resolve) => setTimeout(resolve, 50));
    nowMs += 60_001;
    expect((await waiting).jobs).toEqual([]);
  }, 5_000);

  it('answers a claim whose presence the store failed to write, and reports the failure', async () => {
    const down = new Error('registry unreachable');
    const failing = Object.assign(Object.create(store) as Store, {
      recordWorker: () => Promise.reject(down),
    });
    const { engine, dispatcher, presenceFailures } = await dispatcherOver(failing);
    const { id } = await engine.enqueue({ name: 'unlisted', version: 1, payload: {} });
    const answer = await dispatcher.claim(claimOf('unlisted', { waitMs: 0 }), listening());
    expect(answer.jobs.map((job) => job.id)).toEqual([id]);
    expect(presenceFailures).toEqual([down]);
  });
});
