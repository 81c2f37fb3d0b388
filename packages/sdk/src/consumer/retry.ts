import { isWorkqError } from '@workq/core';

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
