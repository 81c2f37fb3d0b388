/**
 * Snooze a job: `Store.snoozeJob`, one fenced `UPDATE` (update-held-job.ts). The held job waits again for
 * `runAt` (`delayed` when that is after `now`), its order key recomputed from the new run time, its attempt
 * uncounted (`attempts` down by one), its lease and worker cleared, and its debounce key given up (it has
 * started: a later debounce of the key makes a new job); nothing else changes, no error is recorded. Returns
 * whether the lease held; a stale lease changes no row.
 */
import type { LeaseRef } from '../../../engine/store.ts';
import { notStartedState } from '../../shared/not-started.ts';
import type { Queryable } from '../connection.ts';
import { RELEASE_LEASE } from '../job-queries.ts';
import { delayedUntil, ORDER_KEY_SQL, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { updateHeldJob } from './update-held-job.ts';

export function snoozeJob(db: Queryable, t: Tables, lease: LeaseRef, runAt: Date, now: Date): Promise<boolean> {
  const state = notStartedState(runAt, now);
  return updateHeldJob(db, t, lease, now, {
    set: `state = ?, delayed_until = ?, attempts = attempts - 1, ${RELEASE_LEASE}, worker_id = NULL, debounce_key = NULL, run_at = ?, order_key = ${ORDER_KEY_SQL}`,
    values: [state, delayedUntil(state, runAt), sqlDate(runAt), runAt.getTime(), runAt.getTime()],
  });
}
