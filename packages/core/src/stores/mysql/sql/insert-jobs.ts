/**
 * Insert jobs: `Store.insertJobs`. One multi-row `INSERT … ON DUPLICATE KEY UPDATE`: a taken idempotency key
 * is a no-op for that row (unlike `INSERT IGNORE`, which would hide other errors), and a taken id fails the
 * statement, inserting nothing: the update sets `id` to NULL when the row it met holds the same id (InnoDB
 * meets the primary key first), which the session's strict mode refuses. Then the jobs holding the batch's
 * ids are read and the others inserted again (`insertAroundTakenIds`); the usual batch, of fresh ids, costs
 * one statement. Only the jobs with a key are read back, by `(name, key)`, to learn which job holds each; a
 * job without a key was inserted as sent. A holder whose key had expired lets go of it
 * (release-expired-keys.ts).
 *
 * Takes the new jobs, in order. Returns one outcome per job, in order: inserted (`created`), the holder of its
 * id or key, or no job when the holder was pruned between the two statements or its key expired (the engine
 * sends the job again). Takes no locks beyond the statements'.
 */
import type { InsertOutcome, NewJob } from '../../../engine/store.ts';
import { keyExpired } from '../../shared/deduplication.ts';
import { insertedRecord } from '../../shared/inserted-record.ts';
import { insertAroundTakenIds } from '../../shared/taken-ids.ts';
import { execute, type Queryable } from '../connection.ts';
import { isTakenJobId } from '../errors.ts';
import { idempotencyRef, selectInserted, selectJobsByIds } from '../job-queries.ts';
import { insertColumns } from '../records.ts';
import type { Tables } from '../tables.ts';
import { releaseExpiredKeys } from './release-expired-keys.ts';

export async function insertJobs(db: Queryable, t: Tables, jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
  try {
    return await insertUnlessIdTaken(db, t, jobs);
  } catch (error) {
    if (!isTakenJobId(error)) throw error;
  }
  return insertAroundTakenIds(jobs, {
    insert: (some) => insertUnlessIdTaken(db, t, some),
    holders: (ids) => selectJobsByIds(db, t, ids),
    isTakenId: isTakenJobId,
  });
}

async function insertUnlessIdTaken(db: Queryable, t: Tables, jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
  const keyed = jobs.filter((job) => job.idempotencyKey !== null);
  const { columns, rows } = insertColumns(jobs);
  await execute(
    db,
    `INSERT INTO ${t.jobs} (${columns}) VALUES ? ON DUPLICATE KEY UPDATE id = IF(id = VALUES(id), NULL, id)`,
    [rows],
  );
  if (keyed.length === 0) return jobs.map((job) => ({ job: insertedRecord(job), created: true }));
  const { byKey } = await selectInserted(db, t, keyed);
  const expired: NewJob[] = [];
  const outcomes = jobs.map((job): InsertOutcome => {
    if (job.idempotencyKey === null) return { job: insertedRecord(job), created: true };
    const found = byKey.get(idempotencyRef(job.name, job.idempotencyKey));
    // No holder: it was pruned between the two statements; an expired one lets go of its key (see `KeyHolderGone`).
    if (!found) return { job: null, created: false };
    if (found.id === job.id) return { job: insertedRecord(job), created: true };
    if (!keyExpired(found, job)) return { job: found, created: false };
    expired.push(job);
    return { job: null, created: false };
  });
  await releaseExpiredKeys(db, t, expired);
  return outcomes;
}
