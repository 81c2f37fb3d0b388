import { describe, expect, it } from 'vitest';
import { validationError } from '../../test/support/fixtures.ts';
import { checkIdempotencyKey, ENGINE_JOB_DEFAULTS, resolveJobOptions, resolveRunAt } from './options.ts';

const validationMessage = (run: () => unknown): string => validationError(run).message;

describe('resolveJobOptions', () => {
  it('uses the engine defaults when nothing is given', () => {
    expect(resolveJobOptions(undefined, undefined)).toEqual({
      priority: 0,
      maxAttempts: 5,
      backoff: { type: 'exponential', delayMs: 1_000 },
      leaseMs: 30_000,
      order: 'fifo',
      retention: null,
    });
    expect(ENGINE_JOB_DEFAULTS).toEqual(resolveJobOptions({}, {}));
  });

  it('prefers the explicit option, then the job-type default, then the engine default, per field', () => {
    const defaults = { priority: 3, maxAttempts: 9, order: 'lifo' as const };
    expect(resolveJobOptions({ priority: 7 }, defaults)).toEqual({
      priority: 7,
      maxAttempts: 9,
      backoff: { type: 'exponential', delayMs: 1_000 },
      leaseMs: 30_000,
      order: 'lifo',
      retention: null,
    });
    const explicit = {
      priority: -2,
      maxAttempts: 1,
      backoff: { type: 'fixed', delayMs: 10, maxDelayMs: 20 } as const,
      leaseMs: 500,
      order: 'fifo' as const,
    };
    expect(resolveJobOptions(explicit, defaults)).toEqual({ ...explicit, retention: null });
    expect(resolveJobOptions({ priority: 0 }, { priority: 5 }).priority).toBe(0);
  });

  it('takes a retention whole, the explicit one over the default, and none when it names no end', () => {
    const defaults = { retention: { completedMs: 60_000, deadMs: null } };
    expect(resolveJobOptions(undefined, defaults).retention).toEqual({ completedMs: 60_000, deadMs: null });
    expect(resolveJobOptions({ retention: { deadMs: 0 } }, defaults).retention).toEqual({
      completedMs: null,
      deadMs: 0,
    });
    expect(resolveJobOptions({ retention: {} }, undefined).retention).toBeNull();
    expect(validationMessage(() => resolveJobOptions({ retention: { deadMs: -1 } }, undefined))).toContain(
      'retention.deadMs',
    );
  });

  it('never shares or mutates the caller’s objects', () => {
    const backoff = { type: 'fixed', delayMs: 10 } as const;
    const options = { backoff };
    const resolved = resolveJobOptions(options, undefined);
    expect(resolved.backoff).not.toBe(backoff);
    resolved.backoff.delayMs = 99;
    expect(backoff.delayMs).toBe(10);
    expect(options).toEqual({ backoff: { type: 'fixed', delayMs: 10 } });
    expect(ENGINE_JOB_DEFAULTS.backoff).toEqual({ type: 'exponential', delayMs: 1_000 });
  });

  it.each([
    ['priority', { priority: 1.5 }, /priority must be an integer from -1000000 to 1000000; got 1.5/],
    ['priority', { priority: 1_000_001 }, /priority/],
    ['priority', { priority: Number.NaN }, /priority/],
    ['maxAttempts', { maxAttempts: 0 }, /maxAttempts must be an integer from 1 to 1000; got 0/],
    ['maxAttempts', { maxAttempts: 1_001 }, /maxAttempts/],
    ['leaseMs', { leaseMs: 0 }, /leaseMs must be an integer from 100 to 86400000/],
    ['leaseMs', { leaseMs: 86_400_001 }, /leaseMs/],
    ['leaseMs', { leaseMs: 99 }, /leaseMs must be an integer from 100 to 86400000 \(100 ms to 24 h\); got 99/],
    ['order', { order: 'random' }, /order must be "fifo" or "lifo"; got random/],
    ['backoff.type', { backoff: { type: 'linear', delayMs: 1 } }, /backoff.type must be "fixed" or "exponential"/],
    ['backoff.delayMs', { backoff: { type: 'fixed', delayMs: -1 } }, /backoff.delayMs must be an integer/],
    ['backoff.delayMs', { backoff: { type: 'fixed', delayMs: 8 * 86_400_000 } }, /backoff.delayMs/],
    ['backoff.maxDelayMs', { backoff: { type: 'fixed', delayMs: 1, maxDelayMs: 0.5 } }, /backoff.maxDelayMs/],
  ])('rejects a bad %s with VALIDATION naming it: %j', (_field, options, message) => {
    expect(validationMessage(() => resolveJobOptions(options as never, undefined))).toMatch(message);
  });

  it('checks values that come from defaults, too', () => {
    expect(validationMessage(() => resolveJobOptions({}, { maxAttempts: -1 }))).toMatch(/maxAttempts/);
    expect(validationMessage(() => resolveJobOptions({}, { order: 'x' as never }))).toMatch(/order/);
  });
});

describe('resolveRunAt', () => {
  const now = new Date('2026-03-01T12:00:00.000Z');

  it('is now by default, now + delayMs with a delay, and runAt when given (which wins over delayMs)', () => {
    expect(resolveRunAt(undefined, now)).toEqual(now);
    expect(resolveRunAt({ delayMs: 1_500 }, now)).toEqual(new Date(now.getTime() + 1_500));
    const runAt = new Date('2027-01-01T00:00:00.000Z');
    expect(resolveRunAt({ runAt, delayMs: 1_500 }, now)).toEqual(runAt);
  });

  it('rejects a negative or fractional delay and an invalid runAt with VALIDATION', () => {
    expect(validationMessage(() => resolveRunAt({ delayMs: -1 }, now))).toMatch(/delayMs/);
    expect(validationMessage(() => resolveRunAt({ delayMs: 0.5 }, now))).toMatch(/delayMs/);
    expect(validationMessage(() => resolveRunAt({ runAt: new Date(Number.NaN) }, now))).toMatch(/runAt/);
    expect(validationMessage(() => resolveRunAt({ runAt: '2026-01-01' as never }, now))).toMatch(/runAt/);
    // Outside what every store keeps: refused the same way on each.
    expect(validationMessage(() => resolveRunAt({ runAt: new Date(Date.UTC(12_000, 0, 1)) }, now))).toMatch(/9999/);
    expect(validationMessage(() => resolveRunAt({ runAt: new Date(-1) }, now))).toMatch(/1970/);
  });
});

describe('checkIdempotencyKey', () => {
  it('passes a key of 1-255 characters through and maps a missing key to null', () => {
    expect(checkIdempotencyKey(undefined)).toBeNull();
    expect(checkIdempotencyKey('k')).toBe('k');
    expect(checkIdempotencyKey('x'.repeat(255))).toHaveLength(255);
  });

  it('rejects an empty, overlong or non-string key with VALIDATION', () => {
    for (const key of ['', 'x'.repeat(256), 42 as never]) {
      expect(validationMessage(() => checkIdempotencyKey(key))).toMatch(/idempotencyKey/);
    }
  });
});
