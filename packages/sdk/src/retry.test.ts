import { WorkqError } from '@workq/core';
import { describe, expect, it } from 'vitest';
import {
  BeforeSending,
  EnqueueAttemptsFailed,
  enqueueRetryDelayMs,
  type RetryClock,
  sendWithRetries,
} from './retry.ts';

/** A clock that only moves when slept on (or by `advance`), recording each sleep. */
function fakeClock(): RetryClock & { slept: number[]; advance(ms: number): void } {
  let now = 0;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
  };
}

const refused = () => {
  const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  return new WorkqError('UNAVAILABLE', 'Cannot reach the queue server', { cause: socket });
};
const timedOut = () => new WorkqError('TIMEOUT', 'no answer', { retryable: true });

describe('enqueueRetryDelayMs', () => {
  it('doubles from 250 ms up to 4 s, each delay drawn between half and all of its step', () => {
    expect([1, 2, 3, 4, 5, 6, 12].map((retry) => enqueueRetryDelayMs(retry, () => 1))).toEqual([
      250, 500, 1_000, 2_000, 4_000, 4_000, 4_000,
    ]);
    expect(enqueueRetryDelayMs(3, () => 0)).toBe(500);
  });
});

describe('sendWithRetries', () => {
  it('sends again after UNAVAILABLE and TIMEOUT, with growing delays, until an attempt succeeds', async () => {
    const clock = fakeClock();
    const failures = [refused(), timedOut(), timedOut()];
    const limits: number[] = [];
    const result = await sendWithRetries(
      { retries: 3, budgetMs: 60_000 },
      async (timeoutMs) => {
        limits.push(timeoutMs);
        const failure = failures.shift();
        if (failure) throw failure;
        return 'stored';
      },
      clock,
    );
    expect(result).toBe('stored');
    expect(clock.slept).toHaveLength(3);
    expect(clock.slept.every((ms, i) => i === 0 || ms > (clock.slept[i - 1] as number) / 2)).toBe(true);
    // Each attempt may take what is left of the budget.
    expect(limits[0]).toBe(60_000);
    expect(limits[3]).toBe(60_000 - clock.slept.reduce((a, b) => a + b, 0));
  });

  it('stops after the retries allowed, saying how many attempts were made and whether one may have been stored', async () => {
    const clock = fakeClock();
    const failures = [timedOut(), refused(), refused(), refused()];
    const outcome = sendWithRetries(
      { retries: 3, budgetMs: 60_000 },
      async () => {
        throw failures.shift();
      },
      clock,
    );
    await expect(outcome).rejects.toBeInstanceOf(EnqueueAttemptsFailed);
    await expect(outcome).rejects.toMatchObject({ attempts: 4, mayBeStored: true, last: { code: 'UNAVAILABLE' } });
  });

  it('knows a job was not stored when no attempt reached the server', async () => {
    const clock = fakeClock();
    const outcome = sendWithRetries(
      { retries: 2, budgetMs: 60_000 },
      async () => {
        throw refused();
      },
      clock,
    );
    await expect(outcome).rejects.toMatchObject({ attempts: 3, mayBeStored: false });
  });

  it('knows a job was not stored when every attempt failed before its request went out', async () => {
    const clock = fakeClock();
    const outcome = sendWithRetries(
      { retries: 1, budgetMs: 60_000 },
      async () => {
        throw new BeforeSending(timedOut());
      },
      clock,
    );
    await expect(outcome).rejects.toMatchObject({ attempts: 2, mayBeStored: false, last: { code: 'TIMEOUT' } });
  });

  it('starts no retry that would begin past the budget', async () => {
    const clock = fakeClock();
    let attempts = 0;
    const outcome = sendWithRetries(
      { retries: 10, budgetMs: 1_000 },
      async (timeoutMs) => {
        attempts++;
        // Each attempt times out after all the time it was given.
        clock.advance(Math.min(timeoutMs, 400));
        throw timedOut();
      },
      clock,
    );
    await expect(outcome).rejects.toBeInstanceOf(EnqueueAttemptsFailed);
    expect(clock.now()).toBeLessThanOrEqual(1_000);
    expect(attempts).toBeLessThan(4);
  });

  it('throws any other failure at once, unwrapped', async () => {
    const clock = fakeClock();
    const invalid = new WorkqError('VALIDATION', 'bad payload');
    await expect(
      sendWithRetries(
        { retries: 3, budgetMs: 60_000 },
        async () => {
          throw invalid;
        },
        clock,
      ),
    ).rejects.toBe(invalid);
    expect(clock.slept).toEqual([]);
  });
});
