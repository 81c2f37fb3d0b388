/**
 * Fail a job: `Store.failJob`, one fenced `UPDATE` (update-held-job.ts). With no `retryAt` the job is made
 * `dead` and finished; with one it waits again (`delayed` when `retryAt` is after `now`), its order key
 * recomputed from the new run time. Either way the error is appended to `errors` and made the last `error`, and
 * the lease is cleared. Returns whether the lease held. The `UPDATE` that makes a job dead matches only jobs
 * without a parent; a child's death is `failHeldChild`, in a transaction with its parent's settling.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { LeaseRef } from '../../../engine/store.ts';
import type { JobError } from '../../../jobs.ts';
import { notStartedState } from '../../shared/not-started.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { appendedErrorsSql } from '../error-history.ts';
import { FENCE, fenceValues, RELEASE_LEASE } from '../job-queries.ts';
import { delayedUntil, ORDER_KEY_SQL, sqlDate, writeJson } from '../records.ts';
import type { Tables } from '../tables.ts';
import { endedChildren, settleParents } from './settle-parents.ts';
import { updateHeldJob } from './update-held-job.ts';

/** A failed attempt's error (JSON text, given twice) appended to `errors`, then made the last `error`. */
const RECORD_ERROR = `errors = ${appendedErrorsSql('?')}, error = ?`;

/** The `SET` list that makes a held job dead. Values: the error twice, `now`. */
const DEAD = `state = 'dead', ${RECORD_ERROR}, ${RELEASE_LEASE}, finished_at = ?`;

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
      set: DEAD,
      values: [error, error, sqlDate(now)],
      also: 'parent_id IS NULL',
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

/**
 * `failJob` to dead of a held child, in a transaction (the caller's): the row locked and read through the
 * fence, made dead as `failJob` makes a job dead, then its parent settled (settle-parents.ts). Resolves to
 * whether the lease held, and the names of the parents made ready.
 */
export async function failHeldChild(
  c: PoolConnection,
  t: Tables,
  lease: LeaseRef,
  error: JobError,
  now: Date,
): Promise<{ held: boolean; ready: string[] }> {
  const rows = await selectRows(c, `SELECT id, name, parent_id, on_failure FROM ${t.jobs} WHERE ${FENCE} FOR UPDATE`, [
    ...fenceValues(lease, now),
  ]);
  if (rows.length === 0) return { held: false, ready: [] };
  const recorded = writeJson(error);
  await updateHeldJob(c, t, lease, now, { set: DEAD, values: [recorded, recorded, sqlDate(now)] });
  return {
    held: true,
    ready: await settleParents(
      c,
      t,
      endedChildren(rows, 'dead', () => error),
      now,
    ),
  };
}
