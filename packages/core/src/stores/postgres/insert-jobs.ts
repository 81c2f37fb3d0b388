import type { InsertOutcome, JobRecord, NewJob } from '../../engine/store.ts';
import { keyExpired } from '../shared/deduplication.ts';
import { insertedRecord } from '../shared/inserted-record.ts';
import { insertAroundTakenIds } from '../shared/taken-ids.ts';
import type { SqlQueryable, SqlStatement } from './connection.ts';
import { isTakenJobId } from './errors.ts';
import { type JobRow, newJobParams, newJobValues, shareSettings, toJobRecord } from './records.ts';
import type { Statements } from './statements.ts';

/** A job's `(name, idempotency key)` as one map key. */
export const idempotencyRef = (name: string, key: string) => JSON.stringify([name, key]);

/** `jobs` ordered by `(name, idempotency key)`; each job's ref is built once, not once per comparison. */
function sortedByKey(jobs: readonly NewJob[]): NewJob[] {
  const refs = jobs.map((job) => ({ ref: idempotencyRef(job.name, job.idempotencyKey ?? ''), job }));
  refs.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
  return refs.map(({ job }) => job);
}

/** `jobs` in ascending id order: as they are when they ascend already (the usual batch), else sorted. */
function byId(jobs: readonly NewJob[]): readonly NewJob[] {
  for (let i = 1; i < jobs.length; i++) {
    if ((jobs[i - 1] as NewJob).id >= (jobs[i] as NewJob).id) return [...jobs].sort((a, b) => (a.id < b.id ? -1 : 1));
  }
  return jobs;
}

/**
 * `Store.insertJobs`: one insert statement for the batch, then, for the jobs whose keys were taken, one read
 * of the holders (and one statement that clears the keys holders let expire). A taken id fails the statement
 * (nothing inserted; no conflict check on ids costs the usual batch anything): then the jobs holding the
 * batch's ids are read and the rest inserted again (`insertAroundTakenIds`).
 */
export async function insertJobs(db: SqlQueryable, sql: Statements, jobs: readonly NewJob[]): Promise<InsertOutcome[]> {
  if (jobs.length === 0) return [];
  try {
    return await insertUnlessKeyTaken(db, sql, jobs);
  } catch (error) {
    if (!isTakenJobId(error)) throw error;
  }
  return insertAroundTakenIds(jobs, {
    insert: (some) => insertUnlessKeyTaken(db, sql, some),
    holders: (ids) => jobsByIds(db, sql, ids),
    isTakenId: isTakenJobId,
  });
}

/** The jobs holding `ids`, by id. */
export async function jobsByIds(
  db: SqlQueryable,
  sql: Statements,
  ids: readonly string[],
): Promise<Map<string, JobRecord>> {
  const rows = await db.query<JobRow>(sql.selectByIds, [ids]);
  return new Map(rows.map((row) => [row.id, toJobRecord(row)]));
}

/** `insertJobs` for jobs whose ids are free: a taken one fails the statement. */
async function insertUnlessKeyTaken(
  db: SqlQueryable,
  sql: Statements,
  jobs: readonly NewJob[],
): Promise<InsertOutcome[]> {
  // Concurrent batches take their keys, or else their ids, in one global order, so they wait on each other
  // instead of deadlocking. The SDK's and the engine's ids ascend already: only a caller's may need the sort.
  const sorted = jobs.some((job) => job.idempotencyKey !== null) ? sortedByKey(jobs) : byId(jobs);
  const inserted = await insertNew(db, sql, sorted);
  // Every job inserted (always so without keys): outcomes in input order, with no lookup by id.
  if (inserted.length === jobs.length) return jobs.map((job) => ({ job: insertedRecord(job), created: true }));
  const outcomes = new Map<string, InsertOutcome>();
  for (const job of inserted) {
    outcomes.set(job.id, { job: insertedRecord(job), created: true });
  }
  const conflicted = jobs.filter((job) => !outcomes.has(job.id));
  if (conflicted.length > 0) {
    const holders = await keyHolders(db, sql, conflicted);
    const expired: NewJob[] = [];
    for (const job of conflicted) {
      const holder = holders.get(idempotencyRef(job.name, job.idempotencyKey ?? ''));
      if (holder && keyExpired(holder, job)) expired.push(job);
      // No holder: it was pruned between the two statements; an expired one lets go of its key (see `KeyHolderGone`).
      const held = holder && !keyExpired(holder, job);
      outcomes.set(job.id, held ? { job: holder, created: false } : { job: null, created: false });
    }
    await releaseExpiredKeys(db, sql, expired);
  }
  return jobs.map((job) => outcomes.get(job.id) as InsertOutcome);
}

/** Clears the keys whose holders let them expire by the time `jobs` found them taken. */
async function releaseExpiredKeys(db: SqlQueryable, sql: Statements, jobs: readonly NewJob[]): Promise<void> {
  if (jobs.length === 0) return;
  await db.query(sql.releaseExpiredKeys, [
    jobs.map((job) => job.name),
    jobs.map((job) => job.idempotencyKey),
    jobs.map((job) => job.createdAt),
  ]);
}

/** `Store.debounceJobs`: one statement per job. */
export async function debounceJobs(
  db: SqlQueryable,
  sql: Statements,
  jobs: readonly NewJob[],
): Promise<InsertOutcome[]> {
  const outcomes: InsertOutcome[] = [];
  // One statement per job, each atomic on its own: a batch rarely debounces more than one key.
  for (const job of jobs) {
    const text = sql.debounceJob[job.debounceMode ?? 'replace'];
    const [row] = await db.query<JobRow>(text, [...newJobValues(job), job.debounceKey]);
    if (row) {
      outcomes.push({ job: toJobRecord(row), created: row.id === job.id });
      continue;
    }
    // The holder started or finished: it lets go of the key, and the engine sends the job again.
    await db.query(sql.releaseDebounceKey, [job.name, job.debounceKey]);
    outcomes.push({ job: null, created: false });
  }
  return outcomes;
}

/** The retained jobs holding the keys of `jobs`, by `idempotencyRef`. */
export async function keyHolders(
  on: SqlQueryable,
  sql: Statements,
  jobs: readonly NewJob[],
): Promise<Map<string, JobRecord>> {
  const rows = await on.query<JobRow>(sql.selectByIdempotencyKeys, [
    jobs.map((job) => job.name),
    jobs.map((job) => job.idempotencyKey),
  ]);
  return new Map(rows.map((row) => [idempotencyRef(row.name, row.idempotency_key ?? ''), toJobRecord(row)]));
}

/**
 * Runs the insert of `jobs` on `on` and resolves to the jobs it created. A batch with keys skips those
 * already taken and returns the ids it inserted; a batch without keys returns no rows: all of it was inserted.
 */
export async function insertNew(
  on: SqlQueryable,
  sql: Statements,
  jobs: readonly NewJob[],
): Promise<readonly NewJob[]> {
  const { text, params, withKeys } = insertStatement(sql, jobs);
  const rows = await on.query<{ id: string }>(text, params);
  if (!withKeys) return jobs;
  const sent = new Map(jobs.map((job) => [job.id, job]));
  return rows.map(({ id }) => sent.get(id) as NewJob);
}

/**
 * The insert of `jobs`: skipping taken keys only when there are keys (and only then returning the ids it
 * created), sending shared settings once.
 */
export function insertStatement(sql: Statements, jobs: readonly NewJob[]): SqlStatement & { withKeys: boolean } {
  const withKeys = jobs.some((job) => job.idempotencyKey !== null);
  const alike = shareSettings(jobs);
  const [keyed, keyless] = alike
    ? [sql.insertAlikeJobs, sql.insertAlikeJobsWithoutKeys]
    : [sql.insertJobs, sql.insertJobsWithoutKeys];
  const text = withKeys ? keyed : keyless;
  return { text, params: newJobParams(jobs, alike), withKeys };
}
