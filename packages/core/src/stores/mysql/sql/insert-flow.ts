/**
 * Insert a flow: `FlowStore.insertFlow`. A flow of at most `INSERT_CHUNK` jobs goes in first as one plain
 * multi-row `INSERT` on its own (`insertFlowAtOnce`): one round trip, atomic as every statement is, the root
 * with its idempotency key. A taken key or id fails that statement, nothing of the flow stays, and `insertFlow`
 * answers in one transaction (the caller's). There the job holding the root's id, when one does, is the answer,
 * whatever it is (the engine tells whether it is the same job). Otherwise a root with an idempotency key is
 * inserted first on its own, by insert-jobs.ts, which reads back the key's holder: when a retained job holds the
 * key, that job is the answer and nothing more is inserted (an expired holder lets go of its key,
 * release-expired-keys.ts). Then the jobs, every one of them or the root's descendants, by plain multi-row
 * `INSERT`s of `INSERT_CHUNK` rows: a taken id or any other failure fails the statement, and the caller's
 * rollback leaves nothing of the flow. A parent is inserted `waiting-children` (records.ts).
 *
 * Returns the root's record, `created: true`, or the holder of its id or key, `created: false`, or `KeyHolderGone`.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { InsertOutcome, NewJob } from '../../../engine/store.ts';
import { insertedFlowRecord } from '../../shared/flow-records.ts';
import { execute, type Queryable } from '../connection.ts';
import { driverCode } from '../errors.ts';
import { selectJobsByIds } from '../job-queries.ts';
import { JOB_COLUMNS, newJobValues } from '../records.ts';
import type { Tables } from '../tables.ts';
import { insertJobs } from './insert-jobs.ts';

/** The most rows one `INSERT` of a flow carries, so a 10,000-child flow stays far below `max_allowed_packet`. */
const INSERT_CHUNK = 1_000;

/**
 * The flow in one plain `INSERT`, outside any transaction, when it has at most `INSERT_CHUNK` jobs: the root's
 * record, `created: true`. `null`, with nothing inserted, when it has more, or when a key or an id it carries
 * is taken: then `insertFlow` answers.
 */
export async function insertFlowAtOnce(
  db: Queryable,
  t: Tables,
  jobs: readonly NewJob[],
): Promise<InsertOutcome | null> {
  const [root] = jobs;
  if (root === undefined) throw new Error('insertFlow needs the root job');
  if (jobs.length > INSERT_CHUNK) return null;
  try {
    await execute(db, `INSERT INTO ${t.jobs} (${JOB_COLUMNS.join(', ')}) VALUES ?`, [jobs.map(newJobValues)]);
  } catch (error) {
    if (driverCode(error) === 'ER_DUP_ENTRY') return null;
    throw error;
  }
  return { job: insertedFlowRecord(root), created: true };
}

export async function insertFlow(c: PoolConnection, t: Tables, jobs: readonly NewJob[]): Promise<InsertOutcome> {
  const [root] = jobs;
  if (root === undefined) throw new Error('insertFlow needs the root job');
  const holder = (await selectJobsByIds(c, t, [root.id])).get(root.id);
  if (holder) return { job: holder, created: false };
  let rest = jobs;
  if (root.idempotencyKey !== null) {
    const [outcome] = await insertJobs(c, t, [root]);
    if (!outcome?.created) return outcome ?? { job: null, created: false };
    rest = jobs.slice(1);
  }
  await insertRows(c, t, rest);
  return { job: insertedFlowRecord(root), created: true };
}

/** Inserts `jobs` by plain multi-row `INSERT`s of at most `INSERT_CHUNK` rows; any failure throws. */
export async function insertRows(c: PoolConnection, t: Tables, jobs: readonly NewJob[]): Promise<void> {
  for (let from = 0; from < jobs.length; from += INSERT_CHUNK) {
    await execute(c, `INSERT INTO ${t.jobs} (${JOB_COLUMNS.join(', ')}) VALUES ?`, [
      jobs.slice(from, from + INSERT_CHUNK).map(newJobValues),
    ]);
  }
}
