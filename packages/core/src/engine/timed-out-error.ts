import type { JobError } from '../jobs.ts';

/**
 * The error a sweep records for an attempt whose lease ran out at its deadline (claim time + `timeoutMs`):
 * the sweep's own error (`LEASE_EXPIRED`) turned into `TIMEOUT`, at the same time.
 */
export function timedOutError(expired: Omit<JobError, 'attempt'>): Omit<JobError, 'attempt'> {
  return {
    ...expired,
    message: 'The attempt ran past its time limit (timeoutMs) and its worker did not end it; the server did.',
    code: 'TIMEOUT',
  };
}
