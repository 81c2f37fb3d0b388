import { describe, expect, it } from 'vitest';
import { LocalListeners } from '../engine/local-listeners.ts';
import { CancelledLeases } from './cancelled-leases.ts';

function watcher(): { listeners: LocalListeners; leases: CancelledLeases } {
  const listeners = new LocalListeners();
  return { listeners, leases: new CancelledLeases((listener) => listeners.onFinished(listener)) };
}

describe('CancelledLeases', () => {
  it('wakes a wait at the first cancellation of one of its jobs, naming it', async () => {
    const { listeners, leases } = watcher();
    const waiting = leases.waitForCancel(['a', 'b'], 10_000, new AbortController().signal);
    listeners.emitFinished('c', 'cancelled');
    listeners.emitFinished('b', 'cancelled');
    expect(await waiting).toEqual(['b']);
  });

  it('is not woken by a completion or a death, which the holder brought about', async () => {
    const { listeners, leases } = watcher();
    const startMs = Date.now();
    const waiting = leases.waitForCancel(['a'], 60, new AbortController().signal);
    listeners.emitFinished('a', 'completed');
    listeners.emitFinished('a', 'dead');
    expect(await waiting).toEqual([]);
    expect(Date.now() - startMs).toBeGreaterThanOrEqual(55);
  });

  it('ends with none cancelled on abort and on close, and a wait after close ends at once', async () => {
    const { listeners, leases } = watcher();
    const request = new AbortController();
    const aborted = leases.waitForCancel(['a'], 10_000, request.signal);
    const closed = leases.waitForCancel(['a'], 10_000, new AbortController().signal);
    request.abort();
    expect(await aborted).toEqual([]);
    leases.close();
    expect(await closed).toEqual([]);
    expect(await leases.waitForCancel(['a'], 10_000, new AbortController().signal)).toEqual([]);
    // Ended waits are forgotten: a later cancellation finds no one.
    listeners.emitFinished('a', 'cancelled');
  });
});
