import { describe, expect, it } from 'vitest';
import type { Call } from '../transport.ts';
import { JobAbort, LeaseKeeper, localLeaseExpiry, startMarginMs } from './lease-keeper.ts';

describe('JobAbort', () => {
  it('hands out a signal that is already aborted when it is first read after the abort', () => {
    const abort = new JobAbort();
    abort.abort('lost');
    abort.abort('second reason is ignored');
    expect([abort.aborted, abort.reason]).toEqual([true, 'lost']);
    expect([abort.signal.aborted, abort.signal.reason]).toEqual([true, 'lost']);
  });

  it('aborts a signal that was read before the abort, once', () => {
    const abort = new JobAbort();
    const reasons: unknown[] = [];
    abort.signal.addEventListener('abort', () => reasons.push(abort.signal.reason));
    expect(abort.aborted).toBe(false);
    abort.abort('closing');
    abort.abort('again');
    expect(reasons).toEqual(['closing']);
  });
});

describe('localLeaseExpiry', () => {
  const grant = { leaseMs: 30_000, serverExpiresAtMs: 130_000, sentAtMs: 100_000, receivedAtMs: 100_050 };

  it("takes the server's expiry when it lies between what the request's send and receive times allow", () => {
    expect(localLeaseExpiry(grant)).toBe(130_000);
  });

  it('never puts the expiry later than the answer was read plus the lease', () => {
    expect(localLeaseExpiry({ ...grant, serverExpiresAtMs: 200_000 })).toBe(130_050);
  });

  it('never puts it earlier than the request was sent plus the lease: a clock ahead of the server’s does not expire every lease', () => {
    expect(localLeaseExpiry({ ...grant, serverExpiresAtMs: 70_000 })).toBe(130_000);
  });

  it('shows a lease granted while this process was paused as expired when the answer is read', () => {
    // Sent at 100 s, granted at 101 s by the server, read 40 s later.
    const paused = { leaseMs: 30_000, serverExpiresAtMs: 131_000, sentAtMs: 100_000, receivedAtMs: 141_000 };
    expect(localLeaseExpiry(paused)).toBeLessThan(paused.receivedAtMs);
  });
});

describe('startMarginMs', () => {
  it('is a tenth of the lease, at most a second', () => {
    expect([startMarginMs(30_000), startMarginMs(5_000), startMarginMs(200)]).toEqual([1_000, 500, 20]);
  });
});

describe('LeaseKeeper.mayStart', () => {
  /** The round a held job starts stays waiting: the server never answers it. */
  const neverCalled = (() => new Promise(() => undefined)) as unknown as Call;

  it('lets a job start only while its lease has more than the margin left, and forgets one that may not', () => {
    let now = 100_000;
    const keeper = new LeaseKeeper(neverCalled, () => now);
    const grant = { leaseMs: 10_000, serverExpiresAtMs: 110_000, sentAtMs: 100_000, receivedAtMs: 100_000 };
    keeper.hold('fresh', 't1', grant);
    keeper.hold('late', 't2', grant);
    now = 108_999;
    expect(keeper.mayStart('fresh')).toBe(true);
    now = 109_000;
    expect(keeper.mayStart('late')).toBe(false);
    now = 100_000;
    expect(keeper.mayStart('late')).toBe(false);
    expect(keeper.mayStart('unknown')).toBe(false);
    keeper.stop();
  });

  it('does not start a job whose lease was lost', () => {
    const keeper = new LeaseKeeper(neverCalled, () => 100_000);
    const jobAbort = keeper.hold('lost', 't', {
      leaseMs: 10_000,
      serverExpiresAtMs: 110_000,
      sentAtMs: 100_000,
      receivedAtMs: 100_000,
    });
    jobAbort.abort('cancelled');
    expect(keeper.mayStart('lost')).toBe(false);
    keeper.stop();
  });
});

describe('LeaseKeeper rounds', () => {
  const grant = (leaseMs: number) => ({
    leaseMs,
    serverExpiresAtMs: Date.now() + leaseMs,
    sentAtMs: Date.now(),
    receivedAtMs: Date.now(),
  });

  /** A server that records each extension and leaves it waiting until the test answers it. */
  function waitingServer() {
    const requests: { items: { id: string }[]; workerId?: string; answer: (outcomes: unknown[]) => void }[] = [];
    const call = ((fn: (api: unknown, signal: AbortSignal) => Promise<unknown>) =>
      new Promise((resolve) => {
        const api = {
          consumer: {
            extend: {
              mutate: (input: { items: { id: string }[]; workerId?: string }) => {
                requests.push({ ...input, answer: resolve });
                return new Promise(() => undefined);
              },
            },
          },
        };
        void fn(api, new AbortController().signal);
      })) as unknown as Call;
    return { requests, call };
  }

  it('keeps one extension waiting for the worker: jobs held after it was sent cost no request of their own', () => {
    const { requests, call } = waitingServer();
    const keeper = new LeaseKeeper(call, undefined, 'w-1');
    keeper.hold('a', 't', grant(30_000));
    keeper.hold('b', 't', grant(30_000));
    keeper.hold('c', 't', grant(30_000));
    expect(requests.map((r) => [r.workerId, r.items.map((i) => i.id)])).toEqual([['w-1', ['a']]]);
    // A lease too short for the waiting round to extend in time starts a new round at once.
    keeper.hold('d', 't', grant(600));
    expect(requests.map((r) => r.items.map((i) => i.id))).toEqual([['a'], ['a', 'b', 'c', 'd']]);
    keeper.stop();
  });

  it('aborts a held job the answer names cancelled, though the round did not name it, and watches again at once', async () => {
    const { requests, call } = waitingServer();
    const keeper = new LeaseKeeper(call, undefined, 'w-1');
    keeper.hold('a', 't', grant(30_000));
    const later = keeper.hold('b', 't', grant(30_000));
    const first = requests[0]!;
    first.answer([
      { id: 'a', ok: true, leaseExpiresAt: new Date(Date.now() + 30_000) },
      { id: 'b', ok: false, cancelled: true },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(later.aborted).toBe(true);
    expect(String((later.reason as Error).message)).toMatch(/was cancelled/);
    expect(requests.map((r) => r.items.map((i) => i.id))).toEqual([['a'], ['a']]);
    keeper.stop();
  });
});
