/**
 * Lock ready jobs: the claim's second step. Locks up to `limit` ready jobs of one type and version range, in
 * claim order, and reads what a worker is handed of them.
 *
 * Takes a `ClaimRequest` (name, now, versions) and a limit; runs in the claim's transaction. One
 * `SELECT … ORDER BY … LIMIT … FOR UPDATE SKIP LOCKED` along `claim_order`, reading only the index's
 * `waiting` range of the type, so finished history never costs it anything. Locks: the rows it returns,
 * until the transaction ends, so their values hold until the lease (lease-jobs.ts) commits; rows other
 * claims hold are skipped, never waited for. Returns the rows (`CLAIMED_JOB_COLUMNS`), in claim order.
 */
import type { RowDataPacket } from 'mysql2/promise';
import type { ClaimRequest } from '../../../engine/store.ts';
import { CLAIMED_JOB_COLUMNS } from '../../shared/claimed-columns.ts';
import { CLAIM_INDEX } from '../baseline.ts';
import { type Queryable, selectRows } from '../connection.ts';
import { sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { dueDelayedSql } from './promote-due-jobs.ts';

/**
 * The shared claimed columns, `child_count`, which tells a resumed parent (`ClaimedRecord.childCount`), and
 * `parent_id`, which a child's events name.
 */
const CLAIMED_COLUMNS = [...CLAIMED_JOB_COLUMNS, 'child_count', 'parent_id'] as const;

export const CLAIMED_SELECT = CLAIMED_COLUMNS.join(', ');

/** `CLAIMED_SELECT` with each column read from the table aliased `alias`. */
export function claimedSelectOf(alias: string): string {
  return CLAIMED_COLUMNS.map((column) => `${alias}.${column}`).join(', ');
}

/** What a claim's locking read reads besides the jobs, each a column of every row it returns. */
export interface CandidateFlags {
  /** `held`: 1 when the name's settings row holds its claims back (`heldBackSql`). Values: name, now. */
  heldBack?: boolean;
  /** `type_active`: the name's `active` jobs (`countActiveSql`). Values: name. */
  countActive?: boolean;
  /** `due`: 1 when one of the name's delayed jobs is due (`dueDelayedSql`). Values: name, now. */
  dueDelayed?: boolean;
}

/**
 * The statement. Values: those of each flag asked for (in `CandidateFlags`' order), then name, now, minVersion,
 * maxVersion, limit.
 */
export function claimCandidatesSql(t: Tables, options: CandidateFlags = {}): string {
  const held = options.heldBack ? `${heldBackSql(t)} AS held, ` : '';
  const active = options.countActive ? `${countActiveSql(t)} AS type_active, ` : '';
  const due = options.dueDelayed ? `${dueDelayedSql(t)} AS due, ` : '';
  return `SELECT ${held}${active}${due}${CLAIMED_SELECT}
    FROM ${t.jobs} FORCE INDEX (${CLAIM_INDEX})
    WHERE state = 'waiting' AND name = ? AND run_at <= ? AND version BETWEEN ? AND ?
    ORDER BY priority DESC, order_key, tie_key, id LIMIT ? FOR UPDATE SKIP LOCKED`;
}

/**
 * A scalar subquery: 1 when the settings row of one name holds its claims back (paused, a limit set, grouped,
 * or held past now), else 0. One primary-key read, not a locking one, so it waits for no limited claim.
 * Values: name, now.
 */
export function heldBackSql(t: Tables): string {
  return `EXISTS (SELECT 1 FROM ${t.queueSettings} WHERE name = ? AND (paused = 1 OR grouped = 1
    OR concurrency IS NOT NULL OR rate_max IS NOT NULL OR group_concurrency IS NOT NULL OR held_until > ?))`;
}

/** A scalar subquery: the number of `active` jobs of one name. Values: name. */
export function countActiveSql(t: Tables): string {
  return `(SELECT COUNT(*) FROM ${t.jobs} FORCE INDEX (listing) WHERE name = ? AND state = 'active')`;
}

/**
 * Locks up to `limit` ready jobs of the request's name and version range in claim order (`claimCandidatesSql`).
 * Under a `concurrency` limit, the name's active jobs are counted by the same statement, and only the first of
 * the locked jobs that fit beside them are returned: the type's other limited claims wait for its settings row,
 * which the caller holds, so none starts one meanwhile.
 */
export async function lockReadyJobs(
  c: Queryable,
  t: Tables,
  request: ClaimRequest,
  limit: number,
  concurrency: number | null = null,
  options: Omit<CandidateFlags, 'countActive'> = {},
): Promise<RowDataPacket[]> {
  const counting = concurrency !== null;
  const rows = await selectRows(c, claimCandidatesSql(t, { ...options, countActive: counting }), [
    ...(options.heldBack ? [request.name, sqlDate(request.now)] : []),
    ...(counting ? [request.name] : []),
    ...(options.dueDelayed ? [request.name, sqlDate(request.now)] : []),
    request.name,
    sqlDate(request.now),
    request.minVersion,
    request.maxVersion,
    counting ? Math.min(limit, concurrency) : limit,
  ]);
  if (!counting || rows.length === 0) return rows;
  return rows.slice(0, Math.max(0, concurrency - Number(rows[0]?.type_active)));
}
