/**
 * Debounce a job: `Store.debounceJobs` for one job, in one transaction (the caller's). One
 * `INSERT … ON DUPLICATE KEY UPDATE` on the `debounce (name, debounce_key)` index: a new key inserts the job; a
 * taken one updates its holder while that waits, as the job's debounce mode says. Then the holder is read, locked; a holder that had started or
 * finished lets go of the key.
 *
 * Returns the job inserted (`created`), the holder updated, or no job when the key was let go (the engine sends
 * the job again). Locks: the holder, until the transaction ends, so a claim (which skips locked rows) cannot
 * take it in between.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { InsertOutcome, NewJob } from '../../../engine/store.ts';
import type { DebounceMode } from '../../../jobs.ts';
import { execute, selectRows } from '../connection.ts';
import { insertColumns, JOB_SELECT, jobRow, NOT_STARTED_SQL } from '../records.ts';
import type { Tables } from '../tables.ts';

/** `column` takes the inserted row's value only on a holder not yet started (never claimed, so no attempts). */
function whileWaiting(column: string, value = `VALUES(${column})`): string {
  return `${column} = IF(state IN ${NOT_STARTED_SQL} AND attempts = 0, ${value}, ${column})`;
}

/** The payload and settings a debounce gives a holder that waits (`replace` and `preserveRunAt`). */
const NEW_PAYLOAD = [
  whileWaiting('payload'),
  whileWaiting('version'),
  whileWaiting('priority'),
  whileWaiting('max_attempts'),
  whileWaiting('backoff'),
  whileWaiting('lease_ms'),
  whileWaiting('retain_completed_ms'),
  whileWaiting('retain_dead_ms'),
  whileWaiting('timeout_ms'),
];

/**
 * What an insert that finds the debounce key taken does to its holder, by `DebounceMode`: while it waits, it
 * takes the new job's payload, settings and run time (`replace`), its payload and settings (`preserveRunAt`),
 * or nothing (`keepFirst`, which sets the key to itself: the statement needs an assignment). Assignments apply
 * left to right, each seeing the ones before, so the state, which every condition reads, comes last. The order
 * key keeps the holder's order (fifo or lifo): it is the run time in ms, negated for lifo.
 */
const DEBOUNCE_UPDATE: Record<DebounceMode, string> = {
  replace: [
    ...NEW_PAYLOAD,
    whileWaiting('run_at'),
    whileWaiting('order_key', 'IF(job_order = VALUES(job_order), VALUES(order_key), -VALUES(order_key))'),
    whileWaiting('updated_at', 'VALUES(created_at)'),
    whileWaiting('delayed_until'),
    whileWaiting('state'),
  ].join(', '),
  preserveRunAt: [...NEW_PAYLOAD, whileWaiting('updated_at', 'VALUES(created_at)')].join(', '),
  keepFirst: 'debounce_key = debounce_key',
};

/**
 * `Store.debounceJobs` for one job, in the transaction of `c`: the insert (or the holder's update) locks the
 * holder until the transaction ends, so what the read after it sees is what this step did, and a claim, which
 * skips locked rows, cannot take the holder in between.
 */
export async function debounceJob(c: PoolConnection, t: Tables, job: NewJob): Promise<InsertOutcome> {
  const { columns, rows } = insertColumns([job]);
  await execute(
    c,
    `INSERT INTO ${t.jobs} (${columns}) VALUES ? ON DUPLICATE KEY UPDATE ${DEBOUNCE_UPDATE[job.debounceMode ?? 'replace']}`,
    [rows],
  );
  const [row] = await selectRows(
    c,
    `SELECT ${JOB_SELECT} FROM ${t.jobs} WHERE name = ? AND debounce_key = ? FOR UPDATE`,
    [job.name, job.debounceKey],
  );
  const holder = row ? jobRow(row) : null;
  if (holder === null) return { job: null, created: false };
  if (holder.id === job.id) return { job: holder, created: true };
  if (holder.state === 'waiting' && holder.attempts === 0) return { job: holder, created: false };
  // The holder started or finished, so it was left as it was: it lets go of the key, and the engine sends the job again.
  await execute(c, `UPDATE ${t.jobs} SET debounce_key = NULL WHERE id = ?`, [holder.id]);
  return { job: null, created: false };
}
