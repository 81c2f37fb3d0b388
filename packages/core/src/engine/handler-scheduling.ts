import { WorkqError } from '../errors.ts';
import { resolveRunAt } from './options.ts';

const DAY_MS = 86_400_000;

/**
 * The bounds of what a handler may ask of its job's schedule: `ctx.delay(ms)` waits at most `delayMs` (as an
 * enqueue's `delayMs`), `ctx.rateLimited(ms)` holds the job type at most `holdMs` (an upstream's "retry
 * after" longer than a day is better met by pausing the type).
 */
export const HANDLER_SCHEDULING_LIMITS = { delayMs: 365 * DAY_MS, holdMs: DAY_MS } as const;

/** What `ctx.delay` and `ctx.retryAt` ask: a wait from now, or a run time. */
export type SnoozeUntil = { delayMs: number } | { runAt: Date };

/** `ms` when it is a positive finite number of milliseconds at most `max`, rounded up; `VALIDATION` otherwise. */
function checkPositiveMs(ms: unknown, what: string, max: number, hint: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0 || ms > max) {
    throw new WorkqError(
      'VALIDATION',
      `${what} takes a number of milliseconds above 0 and at most ${max} (${hint}); got ${String(ms)}.`,
    );
  }
  return Math.ceil(ms);
}

/** When a snoozed job runs again: now + `delayMs`, or `runAt` (a valid Date; one already past runs at once). */
export function snoozeTime(until: SnoozeUntil, now: Date): Date {
  if (typeof until !== 'object' || until === null) {
    throw new WorkqError('VALIDATION', 'A delay takes { delayMs } or { runAt }.');
  }
  if ('runAt' in until) {
    if (!(until.runAt instanceof Date) || Number.isNaN(until.runAt.getTime())) {
      throw new WorkqError('VALIDATION', `retryAt takes a valid Date; got ${String(until.runAt)}.`);
    }
    return resolveRunAt({ runAt: until.runAt }, now);
  }
  const delayMs = checkPositiveMs(until.delayMs, 'delay', HANDLER_SCHEDULING_LIMITS.delayMs, 'a year');
  return resolveRunAt({ delayMs }, now);
}

/** The length of a job type's hold (`ctx.rateLimited`), checked; `VALIDATION` when out of bounds. */
export function checkHoldMs(holdMs: unknown): number {
  return checkPositiveMs(holdMs, 'rateLimited', HANDLER_SCHEDULING_LIMITS.holdMs, 'a day; pause the type for longer');
}
