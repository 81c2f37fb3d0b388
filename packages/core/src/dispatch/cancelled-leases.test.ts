import { describe, expect, it } from 'vitest';
import { type CancelledListener, LocalListeners } from '../engine/local-listeners.ts';
import { CancelledLeases } from './cancelled-leases.ts';

function watcher(): { listeners: LocalListeners; leases: CancelledLeases } {
  const listeners = new LocalListeners();
  const sources = { onCancelled: [(listener: CancelledListener) => listeners.onCancelled(listener)] };
  return { listeners, leases: new CancelledLeases(sources) };
}

describe('CancelledLeases', () => {
  it('wakes a wait at the first cancellation of one of its jobs, naming it', async () => {
    const { listeners, leases } = watcher();
    const waiting = leases.waitForCancel(
      { ids: ['a', 'b'], workerId: undefined },
      10_000,
      new AbortController().signal,
    );
    listeners.emitCancelled('c', null);
    listeners.emitCancelled('b', null);
    expect(await waiting).toEqual(['b']);
  });

  it('wakes a wait for a worker at the cancellation of any job that worker held, even one it does not name', async () => {
    const { listeners, leases } = watcher();
    const waiting = leases.waitForCancel({ ids: ['a'], workerId: 'w-1' }, 10_000, new AbortController().signal);
    listeners.emitCancelled('x', 'w-2');
    listeners.emitCancelled('y', null);
    listeners.emitCancelled('z', 'w-1');
    expect(await waiting).toEqual(['z']);
    const idle = leases.waitForCancel({ ids: [], workerId: 'w-1' }, 10_000, new AbortController().signal);
    listeners.emitCancelled('q', 'w-1');
    expect(await idle).toEqual(['q']);
  });

  it('is not woken by a finish, even a cancelled one, which is heard as a cancellation', async () => {
    const { listeners, leases } = watcher();
    const startMs = Date.now();
    const waiting = leases.waitForCancel({ ids: ['a'], workerId: undefined }, 60, new AbortController().signal);
    listeners.emitFinished('a', 'completed');
    listeners.emitFinished('a', 'dead');
    listeners.emitFinished('a', 'cancelled');
    expect(await waiting).toEqual([]);
    expect(Date.now() - startMs).toBeGreaterThanOrEqual(55);
  });

  it('ends with none cancelled on abort and on close, and a wait after close ends at once', async () => {
    const { listeners, leases } = watcher();
    const request = new AbortController();
    const aborted = leases.waitForCancel({ ids: ['a'], workerId: undefined }, 10_000, request.signal);
    const closed = leases.waitForCancel({ ids: ['a'], workerId: undefined }, 10_000, new AbortController().signal);
    request.abort();
    expect(await aborted).toEqual([]);
    leases.close();
    expect(await closed).toEqual([]);
    expect(
      await leases.waitForCancel({ ids: ['a'], workerId: undefined }, 10_000, new AbortController().signal),
    ).toEqual([]);
    // Ended waits are forgotten: a later cancellation finds no one.
    listeners.emitCancelled('a', null);
  });
});
