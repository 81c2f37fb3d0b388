/**
 * Insert a flow: `FlowStore.insertFlow`, in one transaction (the caller's). A root with an idempotency key is
 * inserted first on its own (`ON DUPLICATE KEY UPDATE id = id`, as insert-jobs.ts does): when a retained job
 * holds the key, that job is the answer and nothing more is inserted (an expired holder lets go of its key,
 * release-expired-keys.ts). Then the jobs, every one of them or the root's descendants, by plain multi-row
 * `INSERT`s of `INSERT_CHUNK` rows: a taken id or any other failure fails the statement, and the caller's
 * rollback leaves nothing of the flow. A parent is inserted `waiting-children` (records.ts).
 *
 * Returns the root's record, `created: true`, or the key's holder, `created: false`, or `KeyHolderGone`.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { InsertOutcome, NewJob } from '../../../engine/store.ts';
import { keyExpired } from '../../shared/deduplication.ts';
import { insertedFlowRecord } from '../../shared/flow-records.ts';
import { execute } from '../connection.ts';
import { idempotencyRef, selectInserted } from '../job-queries.ts';
import { JOB_COLUMNS, newJobValues } from '../records.ts';
import type { Tables } from '../tables.ts';
import { releaseExpiredKeys } from './release-expired-keys.ts';

/** The most rows one `INSERT` of a flow carries, so a 10,000-child flow stays far below `max_allowed_packet`. */
const INSERT_CHUNK = 1_000;

export async function insertFlow(c: PoolConnection, t: Tables, jobs: readonly NewJob[]): Promise<InsertOutcome> {
  const [root] = jobs;
  if (root === undefined) throw new Error('insertFlow needs the root job');
  let rest = jobs;
  if (root.idempotencyKey !== null) {
    const inserted = await execute(
      c,
      `INSERT INTO ${t.jobs} (${JOB_COLUMNS.join(', ')}) VALUES ? ON DUPLICATE KEY UPDATE id = id`,
      [[newJobValues(root)]],
    );
    if (inserted.affectedRows !== 1) {
      const holder = (await selectInserted(c, t, [root])).byKey.get(idempotencyRef(root.name, root.idempotencyKey));
      if (!holder) return { job: null, created: false };
      if (!keyExpired(holder, root)) return { job: holder, created: false };
      await releaseExpiredKeys(c, t, [root]);
      return { job: null, created: false };
    }
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
