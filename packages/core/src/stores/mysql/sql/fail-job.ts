/**
 * Fail a job: `Store.failJob`, one fenced `UPDATE` (update-held-job.ts). With no `retryAt` the job is made
 * `dead` and finished; with one it waits again (`delayed` when `retryAt` is after `now`), its order key
 * recomputed from the new run time. Either way the error is appended to `errors` and made the last `error`, and
 * the lease is cleared. Returns whether the lease held.
 */
import type { LeaseRef } from '../../../engine/store.ts';
import type { JobError } from '../../../jobs.ts';
import { notStartedState } from '../../shared/not-started.ts';
import type { Queryable } from '../connection.ts';
import { appendedErrorsSql } from '../error-history.ts';
import { RELEASE_LEASE } from '../job-queries.ts';
import { delayedUntil, ORDER_KEY_SQL, sqlDate, writeJson } from '../records.ts';
import type { Tables } from '../tables.ts';
import { updateHeldJob } from './update-held-job.ts';

/** A failed attempt's error (JSON text, given twice) appended to `errors`, then made the last `error`. */
const RECORD_ERROR = `errors = ${appendedErrorsSql('?')}, error = ?`;

export function failJob(
  db: Queryable,
  t: Tables,
  lease: LeaseRef,
  outcome: { error: JobError; retryAt: Date | null },
  now: Date,
): Promise<boolean> {
  const { retryAt } = outcome;
  const error = writeJson(outcome.error);
  if (retryAt === null) {
    return updateHeldJob(db, t, lease, now, {
      set: `state = 'dead', ${RECORD_ERROR}, ${RELEASE_LEASE}, finished_at = ?`,
      values: [error, error, sqlDate(now)],
    });
  }
  const retryState = notStartedState(retryAt, now);
  return updateHeldJob(db, t, lease, now, {
    set: `state = ?, delayed_until = ?, ${RECORD_ERROR}, ${RELEASE_LEASE}, run_at = ?, order_key = ${ORDER_KEY_SQL}`,
    values: [
      retryState,
      delayedUntil(retryState, retryAt),
      error,
      error,
      sqlDate(retryAt),
      retryAt.getTime(),
      retryAt.getTime(),
    ],
  });
}
