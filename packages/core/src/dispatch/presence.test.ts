import { describe, expect, it } from 'vitest';
import { type Store, WORKER_REGISTRY_BOUNDS, type WorkerPresence, type WorkerRoom } from '../engine/store.ts';
import { PresenceTracker } from './presence.ts';

/** A store that records the presence writes it is asked for, and refuses them while `full`. */
function recordingStore() {
  const writes: { worker: WorkerPresence; room: WorkerRoom }[] = [];
  const state = { full: true };
  const store = {
    recordWorker: async (worker: WorkerPresence, room: WorkerRoom) => {
      writes.push({ worker, room });
      return !state.full;
    },
  } as unknown as Store;
  return { store, writes, state };
}

describe('PresenceTracker', () => {
  it('records within WORKER_REGISTRY_BOUNDS, and tries a refused worker again at its next claim', async () => {
    let nowMs = Date.parse('2031-03-01T00:00:00.000Z');
    const { store, writes, state } = recordingStore();
    const tracker = new PresenceTracker(store, { now: () => new Date(nowMs) }, 5_000);
    const worker = { id: 'w1', host: 'h', name: 'job', minVersion: 1, maxVersion: 1, pid: null, startedAt: null };

    expect(await tracker.seen(worker)).toBe(false);
    expect(writes[0]?.room).toEqual({
      maxWorkers: WORKER_REGISTRY_BOUNDS.maxWorkers,
      idleBefore: new Date(nowMs - WORKER_REGISTRY_BOUNDS.idleAfterMs),
    });
    // Refused, so not throttled: the next claim asks again, and is recorded once there is room.
    nowMs += 1;
    state.full = false;
    expect(await tracker.seen(worker)).toBe(true);
    expect(writes).toHaveLength(2);
    // Recorded, so throttled as before: no write within `reportEveryMs`.
    nowMs += 1;
    expect(await tracker.seen(worker)).toBe(true);
    expect(writes).toHaveLength(2);
  });

  it('never fails a claim or an extension: a failed write is reported and tried again at the next', async () => {
    const failures: unknown[] = [];
    const calls: string[] = [];
    const down = new Error('store unreachable');
    const store = {
      recordWorker: async () => {
        calls.push('recordWorker');
        throw down;
      },
      touchWorkers: async () => {
        calls.push('touchWorkers');
        throw down;
      },
    } as unknown as Store;
    const tracker = new PresenceTracker(store, { now: () => new Date() }, 5_000, (error) => failures.push(error));
    const worker = { id: 'w1', host: 'h', name: 'job', minVersion: 1, maxVersion: 1, pid: null, startedAt: null };

    expect(await tracker.seen(worker)).toBe(false);
    await tracker.touched('w1');
    expect(failures).toEqual([down, down]);
    // Not throttled after a failure: the next claim and extension write again.
    expect(await tracker.seen(worker)).toBe(false);
    await tracker.touched('w1');
    expect(calls).toEqual(['recordWorker', 'touchWorkers', 'recordWorker', 'touchWorkers']);
  });
});
