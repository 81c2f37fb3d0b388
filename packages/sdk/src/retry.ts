import { isWorkqError, type WorkqError } from '@workq/core';
import { neverSent } from './errors.ts';

/** Exponential delay for reconnecting: 100 ms doubling to 5 s, with jitter. */
export function reconnectDelayMs(failures: number): number {
  const capped = Math.min(5_000, 100 * 2 ** Math.min(failures - 1, 10));
  return Math.round(capped / 2 + Math.random() * (capped / 2));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Whether a failed call may succeed later (server restarting, connection dropped). */
export function isRetryable(error: unknown): boolean {
  return isWorkqError(error) && error.retryable;
}

/**
 * Retries `run` while it fails with a retryable error, until `giveUpAt`
 * (epoch ms). Non-retryable errors are thrown at once.
 */
export async function retrying<T>(run: () => Promise<T>, giveUpAt: number): Promise<T> {
  for (let failures = 1; ; failures++) {
    try {
      return await run();
    } catch (error) {
      const delayMs = reconnectDelayMs(failures);
      if (!isRetryable(error) || Date.now() + delayMs > giveUpAt) throw error;
      await sleep(delayMs);
    }
  }
}

/** How an enqueue is sent again after a failure that may pass. */
export interface EnqueueRetryPolicy {
  /** Attempts after the first. */
  retries: number;
  /** Time for all attempts together, from the start of the first. */
  budgetMs: number;
}

/** Delay before retry `retry` (1-based): 250 ms doubling up to 4 s, each drawn between half and all of that. */
export function enqueueRetryDelayMs(retry: number, random: () => number = Math.random): number {
  const capped = Math.min(4_000, 250 * 2 ** Math.min(retry - 1, 10));
  return Math.round(capped / 2 + random() * (capped / 2));
}

/** Failures after which an enqueue is sent again: the server was out of reach, or did not answer in time. */
function isPassing(error: unknown): error is WorkqError {
  return isWorkqError(error) && (error.code === 'UNAVAILABLE' || error.code === 'TIMEOUT');
}

/** An enqueue that failed on every attempt it was allowed. */
export class EnqueueAttemptsFailed extends Error {
  constructor(
    /** The last attempt's failure. */
    readonly last: WorkqError,
    readonly attempts: number,
    /** Whether any attempt may have reached the server, so that the job may have been stored. */
    readonly mayBeStored: boolean,
  ) {
    super(last.message, { cause: last });
  }
}

/** What an attempt throws for a failure that came before its request was sent: whatever it was, nothing was stored. */
export class BeforeSending extends Error {
  constructor(readonly failure: unknown) {
    super('failed before sending', { cause: failure });
  }
}

export interface RetryClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const systemClock: RetryClock = { now: () => Date.now(), sleep: (ms) => sleep(ms) };

/**
 * Runs `attempt`, handing it the time it may take, and runs it again after
 * an `UNAVAILABLE` or `TIMEOUT` failure, up to `policy.retries` times, with
 * backoff, while `policy.budgetMs` lasts. Only safe for a request that the
 * server applies once however often it arrives (an enqueue under idempotency
 * keys). Other failures are thrown as they are; when the attempts run out,
 * rejects with `EnqueueAttemptsFailed`. An attempt throws `BeforeSending`
 * for a failure before its request went out (its catalog registration).
 */
export async function sendWithRetries<T>(
  policy: EnqueueRetryPolicy,
  attempt: (timeoutMs: number) => Promise<T>,
  clock: RetryClock = systemClock,
): Promise<T> {
  const deadline = clock.now() + policy.budgetMs;
  let mayBeStored = false;
  for (let attempts = 1; ; attempts++) {
    try {
      return await attempt(Math.max(1, deadline - clock.now()));
    } catch (thrown) {
      const sent = !(thrown instanceof BeforeSending);
      const error = sent ? thrown : thrown.failure;
      if (!isPassing(error)) throw error;
      mayBeStored ||= sent && !neverSent(error);
      const delayMs = enqueueRetryDelayMs(attempts);
      if (attempts > policy.retries || clock.now() + delayMs >= deadline) {
        throw new EnqueueAttemptsFailed(error, attempts, mayBeStored);
      }
      await clock.sleep(delayMs);
    }
  }
}
