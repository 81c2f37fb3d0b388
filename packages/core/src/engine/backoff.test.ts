import { describe, expect, it } from 'vitest';
import { backoffDelayMs, DEFAULT_MAX_BACKOFF_MS } from './backoff.ts';

const lowest = () => 0;
const highest = () => 0.999_999_999;

describe('backoffDelayMs', () => {
  it('fixed: the same delay for every attempt, whatever the random source', () => {
    const backoff = { type: 'fixed', delayMs: 2_500 } as const;
    for (const attempt of [1, 2, 10, 50]) {
      expect(backoffDelayMs(backoff, attempt, lowest)).toBe(2_500);
      expect(backoffDelayMs(backoff, attempt, highest)).toBe(2_500);
    }
  });

  it('fixed: capped by maxDelayMs', () => {
    expect(backoffDelayMs({ type: 'fixed', delayMs: 5_000, maxDelayMs: 1_000 }, 1)).toBe(1_000);
  });

  it('exponential: doubles per attempt, jittered into [d/2, d]', () => {
    const backoff = { type: 'exponential', delayMs: 1_000 } as const;
    for (const [attempt, full] of [
      [1, 1_000],
      [2, 2_000],
      [3, 4_000],
      [6, 32_000],
    ] as const) {
      expect(backoffDelayMs(backoff, attempt, lowest)).toBe(full / 2);
      expect(backoffDelayMs(backoff, attempt, () => 0.5)).toBe((full * 3) / 4);
      expect(backoffDelayMs(backoff, attempt, highest)).toBe(full);
    }
  });

  it('exponential: stays within bounds for many random draws', () => {
    const backoff = { type: 'exponential', delayMs: 300 } as const;
    for (let i = 0; i < 1_000; i++) {
      const delay = backoffDelayMs(backoff, 4);
      expect(delay).toBeGreaterThanOrEqual(1_200);
      expect(delay).toBeLessThanOrEqual(2_400);
    }
  });

  it('exponential: capped by maxDelayMs before jitter', () => {
    const backoff = { type: 'exponential', delayMs: 1_000, maxDelayMs: 5_000 } as const;
    expect(backoffDelayMs(backoff, 3, highest)).toBe(4_000);
    expect(backoffDelayMs(backoff, 4, highest)).toBe(5_000);
    expect(backoffDelayMs(backoff, 4, lowest)).toBe(2_500);
    expect(backoffDelayMs(backoff, 1_000, highest)).toBe(5_000);
  });

  it('exponential: capped at one hour by default, even for huge attempt numbers', () => {
    const backoff = { type: 'exponential', delayMs: 1_000 } as const;
    expect(backoffDelayMs(backoff, 30, highest)).toBe(DEFAULT_MAX_BACKOFF_MS);
    expect(backoffDelayMs(backoff, 5_000, highest)).toBe(DEFAULT_MAX_BACKOFF_MS);
    expect(DEFAULT_MAX_BACKOFF_MS).toBe(3_600_000);
  });

  it('exponential: attempt 0 or below counts as the first attempt; a zero delay stays zero', () => {
    expect(backoffDelayMs({ type: 'exponential', delayMs: 800 }, 0, highest)).toBe(800);
    expect(backoffDelayMs({ type: 'exponential', delayMs: 0 }, 5, highest)).toBe(0);
  });
});
