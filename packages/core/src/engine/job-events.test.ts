import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventsOfRun, type JobEvent } from '../events.ts';
import { createPgliteStore } from '../stores/postgres/index.ts';
import { createEngine } from './engine.ts';
import type { JobEventSink } from './job-events.ts';
import type { Store } from './store.ts';

let store: Store;

beforeAll(async () => {
  store = await createPgliteStore();
});

afterAll(() => store?.close());

function recordingSink(listening = true): JobEventSink & { events: JobEvent[] } {
  const events: JobEvent[] = [];
  return {
    events,
    get listening() {
      return listening;
    },
    publish: (runs) => void events.push(...runs.flatMap(eventsOfRun)),
  };
}

it('builds no events while nobody listens', async () => {
  const sink = recordingSink(false);
  const engine = createEngine({ store, events: sink, leaseSweepIntervalMs: 0 });
  const { id } = await engine.enqueue({ name: 'quiet', version: 1, payload: {} });
  const [job] = await engine.claim({ name: 'quiet', maxVersion: 1, limit: 1, workerId: 'w' });
  await engine.complete({ id, leaseToken: job?.leaseToken as string }, { ok: true });
  expect(sink.events).toEqual([]);
});

it("names the job of an ack for a lease another process made, reading it back, with the ack's result", async () => {
  const claimer = createEngine({ store, leaseSweepIntervalMs: 0 });
  const sink = recordingSink();
  const acker = createEngine({ store, events: sink, leaseSweepIntervalMs: 0 });
  const { id } = await claimer.enqueue({ name: 'elsewhere', version: 3, payload: {} });
  const [job] = await claimer.claim({ name: 'elsewhere', maxVersion: 3, limit: 1, workerId: 'w' });
  await acker.complete({ id, leaseToken: job?.leaseToken as string }, { rows: 2 });
  await expect.poll(() => sink.events.length).toBe(1);
  expect(sink.events[0]).toMatchObject({
    type: 'completed',
    id,
    name: 'elsewhere',
    version: 3,
    attempt: 1,
    result: { rows: 2 },
  });
});

it('reports a lease the sweep ended: failed with LEASE_EXPIRED, and dead when no attempt remains', async () => {
  let nowMs = Date.now();
  const clock = { now: () => new Date(nowMs) };
  const sink = recordingSink();
  const engine = createEngine({ store, events: sink, clock, leaseSweepIntervalMs: 0 });
  const [again, last] = await engine.enqueueMany([
    { name: 'stalled', version: 1, payload: {}, options: { leaseMs: 1_000, maxAttempts: 2 } },
    { name: 'stalled', version: 1, payload: {}, options: { leaseMs: 1_000, maxAttempts: 1 } },
  ]);
  expect(await engine.claim({ name: 'stalled', maxVersion: 1, limit: 2, workerId: 'w' })).toHaveLength(2);
  sink.events.length = 0;
  nowMs += 1_001;
  expect(await engine.sweepExpiredLeases()).toEqual({ requeued: 1, dead: 1 });
  const error = { message: expect.stringContaining('lease expired'), code: 'LEASE_EXPIRED' };
  expect(sink.events).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ type: 'failed', id: again?.id, attempt: 1, error, willRetry: true }),
      expect.objectContaining({ type: 'failed', id: last?.id, attempt: 1, error, willRetry: false }),
      expect.objectContaining({ type: 'dead', id: last?.id, attempt: 1, error }),
    ]),
  );
  expect(sink.events).toHaveLength(3);
});
