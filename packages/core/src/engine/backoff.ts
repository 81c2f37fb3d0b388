import type { Backoff } from '../contract/types.ts';

export const DEFAULT_MAX_BACKOFF_MS = 3_600_000;

/**
 * The delay before the attempt after `attempt` (1-based) failed. Exponential
 * backoff doubles per attempt, is capped at `maxDelayMs`, and is jittered into
 * the upper half of its value so retries of many jobs do not arrive together.
 */
export function backoffDelayMs(backoff: Backoff, attempt: number, random: () => number = Math.random): number {
  const capMs = backoff.maxDelayMs ?? DEFAULT_MAX_BACKOFF_MS;
  if (backoff.type === 'fixed') return Math.min(backoff.delayMs, capMs);
  const fullMs = Math.min(capMs, backoff.delayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(fullMs / 2 + random() * (fullMs / 2));
}
