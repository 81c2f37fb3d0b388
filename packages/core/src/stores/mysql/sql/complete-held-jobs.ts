/**
 * Complete held jobs: `Store.completeJobs` for a batch that names each job once. One fenced `UPDATE`, outside
 * any transaction, completes every ack whose token still holds its job (`active`, that token, the lease
 * unexpired at `now`), each with its own result; `also`, when given, is one more condition a job must meet.
 * A token or a result that every ack of the batch shares (the acks of one claim, results of one shape) is one
 * value in the statement, not a `CASE` over the ids, which the server would evaluate for every row.
 *
 * Takes the acks (id, lease token, result), `now` and `also`. Returns the ids completed, in the acks' order;
 * an ack whose lease is gone changes nothing. When the update matched every ack, each was completed by it and
 * nothing is read back. When it matched some, the jobs it completed are read back: completed at `now` and
 * keeping their ack's token. Only another call acking one of those leases in the same millisecond could make
 * that read take a job the other call completed, and then both count it. Locks: each row it updates, for the
 * statement. Guarantees: a completed job keeps its lease's token (its expiry is cleared), so a repeat of
 * that ack is recognised as applied.
 */
import type { Pool } from 'mysql2/promise';
import type { LeaseRef } from '../../../engine/store.ts';
import { execute, selectRows } from '../connection.ts';
import { END_LEASE_KEEPING_TOKEN } from '../job-queries.ts';
import { sqlDate, writeJson } from '../records.ts';
import type { Tables } from '../tables.ts';

export async function completeHeldJobs(
  pool: Pool,
  t: Tables,
  jobs: readonly (LeaseRef & { result: unknown })[],
  now: Date,
  also?: string,
): Promise<string[]> {
  const ids = jobs.map((job) => job.id);
  const result = valueById(
    ids,
    jobs.map((job) => writeJson(job.result)),
  );
  const token = valueById(
    ids,
    jobs.map((job) => job.leaseToken),
  );
  const at = sqlDate(now);
  const { affectedRows } = await execute(
    pool,
    `UPDATE ${t.jobs} FORCE INDEX (PRIMARY)
       SET state = 'completed', result = ${result.sql}, ${END_LEASE_KEEPING_TOKEN}, finished_at = ?, updated_at = ?
       WHERE id IN (?) AND state = 'active' AND lease_expires_at > ? AND lease_token = ${token.sql}
         ${also === undefined ? '' : `AND ${also}`}`,
    [...result.values, at, at, ids, at, ...token.values],
  );
  if (affectedRows === ids.length) return ids;
  if (affectedRows === 0) return [];
  const completed = await selectRows(
    pool,
    `SELECT id FROM ${t.jobs} WHERE id IN (?) AND state = 'completed' AND finished_at = ? AND lease_token = ${token.sql}`,
    [ids, at, ...token.values],
  );
  const done = new Set(completed.map((row) => String(row.id)));
  return ids.filter((id) => done.has(id));
}

/**
 * The value of each job, `values[i]` for `ids[i]`, as an SQL expression with its parameters: the one value when
 * all are equal, else a `CASE` over the row's id.
 */
function valueById(ids: readonly string[], values: readonly string[]): { sql: string; values: string[] } {
  const first = values[0] as string;
  if (values.every((value) => value === first)) return { sql: '?', values: [first] };
  return {
    sql: `CASE id ${ids.map(() => 'WHEN ? THEN ?').join(' ')} END`,
    values: ids.flatMap((id, i) => [id, values[i] as string]),
  };
}
