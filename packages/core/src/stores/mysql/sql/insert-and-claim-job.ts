/**
 * Insert and claim: `Handoff.insertAndClaimJob`, for a consumer already waiting. Two statements, each committed
 * on its own: a plain read of whether the waiting claim could take a job already (one of its type and versions
 * ready, or a delayed one due) or the type's settings hold its claims back (`heldBackSql`); then the insert of
 * the job, leased to the claim as `leaseJobs` leases (active, its first attempt, the claim's token, worker and
 * expiry, the attempt's deadline) when the job is due at the claim's time, within its versions, and nothing was
 * found; otherwise waiting, as `insertJobs` inserts it. A job that became ready between the two statements was
 * not ready when the read began, as a claim's own snapshot would not have seen it either.
 *
 * The insert is `insertJobs`' statement for one row: a taken id fails it (nothing inserted), a taken key makes
 * it a no-op, which a keyed job's read of its key's holder tells. Either way it resolves to `null`, and the
 * engine inserts the job as usual, which answers with the holder. Locks: the row it inserts.
 */
import type { ClaimedRecord, ClaimRequest, JobRecord, NewJob } from '../../../engine/store.ts';
import { claimCouldTake, handedRecord, insertedRecord } from '../../shared/inserted-record.ts';
import { CLAIM_INDEX } from '../baseline.ts';
import { execute, type Queryable, selectRows } from '../connection.ts';
import { isTakenJobId } from '../errors.ts';
import { insertColumns, JOB_COLUMNS, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { heldBackSql } from './lock-ready-jobs.ts';
import { dueDelayedSql } from './promote-due-jobs.ts';

export async function insertAndClaimJob(
  db: Queryable,
  t: Tables,
  job: NewJob,
  claim: ClaimRequest,
): Promise<{ job: JobRecord; claimed: ClaimedRecord | null } | null> {
  const handed = claimCouldTake(job, claim) && !(await claimFindsWork(db, t, claim)) ? handedRecord(job, claim) : null;
  const { columns, rows } = insertColumns([job]);
  const [row] = rows;
  if (row === undefined) return null;
  if (handed) leaseRow(row, handed);
  try {
    await execute(
      db,
      `INSERT INTO ${t.jobs} (${columns}) VALUES ? ON DUPLICATE KEY UPDATE id = IF(id = VALUES(id), NULL, id)`,
      [[row]],
    );
  } catch (error) {
    if (isTakenJobId(error)) return null;
    throw error;
  }
  if (job.idempotencyKey !== null && !(await holdsItsKey(db, t, job))) return null;
  return handed ? { job: handed, claimed: handed } : { job: insertedRecord(job), claimed: null };
}

/** Whether a job `claim` could take is ready or due already, or its type's settings hold its claims back. */
async function claimFindsWork(db: Queryable, t: Tables, claim: ClaimRequest): Promise<boolean> {
  const now = sqlDate(claim.now);
  const [found] = await selectRows(
    db,
    `SELECT ${heldBackSql(t)} OR ${dueDelayedSql(t)} OR EXISTS (SELECT 1 FROM ${t.jobs} FORCE INDEX (${CLAIM_INDEX})
      WHERE state = 'waiting' AND name = ? AND run_at <= ? AND version BETWEEN ? AND ?) AS busy`,
    [claim.name, now, claim.name, now, claim.name, now, claim.minVersion, claim.maxVersion],
  );
  return Number(found?.busy) !== 0;
}

/**
 * Sets `row` (an `insertColumns` row, whose values start in `JOB_COLUMNS` order) to the job as a claim leased it,
 * `handed` (`handedRecord`), as `leaseJobs` sets it.
 */
function leaseRow(row: unknown[], handed: JobRecord): void {
  const leased: Partial<Record<(typeof JOB_COLUMNS)[number], unknown>> = {
    state: handed.state,
    attempts: handed.attempts,
    lease_token: handed.leaseToken,
    lease_expires_at: handed.leaseExpiresAt ? sqlDate(handed.leaseExpiresAt) : null,
    worker_id: handed.workerId,
    attempt_deadline: handed.attemptDeadline ? sqlDate(handed.attemptDeadline) : null,
    delayed_until: null,
    updated_at: sqlDate(handed.updatedAt),
  };
  for (const column of Object.keys(leased) as (typeof JOB_COLUMNS)[number][]) {
    row[JOB_COLUMNS.indexOf(column)] = leased[column];
  }
}

/** Whether the job holding `job`'s key is `job`: the insert's no-op on a taken key reports as a row changed. */
async function holdsItsKey(db: Queryable, t: Tables, job: NewJob): Promise<boolean> {
  const [holder] = await selectRows(db, `SELECT id FROM ${t.jobs} WHERE name = ? AND idempotency_key = ?`, [
    job.name,
    job.idempotencyKey,
  ]);
  return holder?.id === job.id;
}
