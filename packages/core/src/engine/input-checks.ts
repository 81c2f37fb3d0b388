import { WorkqError } from '../errors.ts';
import { LEASE_MS_LIMITS, MAX_BATCH_SIZE, TIMEOUT_MS_LIMITS } from '../jobs.ts';

/** A `VALIDATION` error when a batch call (`what`) is given more than `MAX_BATCH_SIZE` items. */
export function checkBatch(size: number, what: string): void {
  if (size > MAX_BATCH_SIZE) {
    throw new WorkqError('VALIDATION', `${what} takes at most ${MAX_BATCH_SIZE} items; got ${size}.`);
  }
}

/** `name` when it can name a job type in an admin call; a `VALIDATION` error otherwise. */
export function checkName(name: string): string {
  if (typeof name !== 'string' || name === '' || name.length > 100) {
    throw new WorkqError(
      'VALIDATION',
      `A job type name is a non-empty string of at most 100 characters; got ${String(name)}.`,
    );
  }
  return name;
}

/** A job's time limit: `timeoutMs` when it is an integer within `TIMEOUT_MS_LIMITS`, `null` when absent. */
export function checkTimeoutMs(timeoutMs: number | undefined): number | null {
  if (timeoutMs === undefined) return null;
  if (!Number.isInteger(timeoutMs) || timeoutMs < TIMEOUT_MS_LIMITS.min || timeoutMs > TIMEOUT_MS_LIMITS.max) {
    throw new WorkqError(
      'VALIDATION',
      `timeoutMs must be an integer from ${TIMEOUT_MS_LIMITS.min} to ${TIMEOUT_MS_LIMITS.max} (100 ms to 24 h); got ${String(timeoutMs)}. Leave it out for no limit.`,
    );
  }
  return timeoutMs;
}

/**
 * `leaseMs` when it is an integer within `LEASE_MS_LIMITS`; a `VALIDATION`
 * error otherwise. Every entry that sets a lease length checks it here:
 * enqueue options, job and engine defaults, claims and extensions.
 */
export function checkLeaseMs(leaseMs: number, what = 'leaseMs'): number {
  if (!Number.isInteger(leaseMs) || leaseMs < LEASE_MS_LIMITS.min || leaseMs > LEASE_MS_LIMITS.max) {
    throw new WorkqError(
      'VALIDATION',
      `${what} must be an integer from ${LEASE_MS_LIMITS.min} to ${LEASE_MS_LIMITS.max} (100 ms to 24 h); got ${String(leaseMs)}. For longer work, extend the lease while the job runs.`,
    );
  }
  return leaseMs;
}
