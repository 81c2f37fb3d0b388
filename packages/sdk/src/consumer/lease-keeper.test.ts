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
  const neverCalled = (() => {
    throw new Error('no request expected');
  }) as unknown as Call;

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
