/**
 * Claim limited jobs: `FlowControlStore.claimLimitedJobs`, in one READ COMMITTED transaction (the caller's).
 *
 * 1. `SELECT … FOR UPDATE` of the type's settings row, which also says whether any of its delayed jobs is due:
 *    the type's limited claims wait here for each other, so every count that follows is taken while no other
 *    claim of the type can start a job. A type without a row is claimed as a plain claim, on this connection.
 * 2. The due jobs promoted (promote-due-jobs.ts), only when step 1 found one due.
 * 3. The pick: for a grouped type in turns (group-claim.ts: walk-groups.ts, lock-group-jobs.ts), else in claim
 *    order (lock-ready-jobs.ts, which under `concurrency` counts the type's active jobs in the same statement).
 * 4. The lease (lease-jobs.ts).
 * 5. Under a rate limit or with groups, one `UPDATE` of the settings row: the rate limit's log and the cursor.
 *
 * Takes the `ClaimRequest`. Returns the jobs leased, whether the type is paused, and when the rate limit or the
 * type's hold next lets a job start. Guarantees: pause, hold, concurrency, rate and group limits hold at the moment of the claim, since
 * the claim reads them from the row it locks; the rate window, room and log are reckoned as on the other stores
 * (limited-claim.ts).
 */
import type { PoolConnection } from 'mysql2/promise';
import type { ClaimRequest, LimitedClaim } from '../../../engine/store.ts';
import { afterStarts, rateWindow, takesTurns } from '../../shared/limited-claim.ts';
import { execute, selectRows } from '../connection.ts';
import { SETTINGS_SELECT, toFlowState } from '../flow-control.ts';
import { pickInTurns } from '../group-claim.ts';
import { claimedRecord, sqlDate } from '../records.ts';
import type { Tables } from '../tables.ts';
import { claimJobs } from './claim-jobs.ts';
import { leaseJobs } from './lease-jobs.ts';
import { lockReadyJobs } from './lock-ready-jobs.ts';
import { dueDelayedSql, promoteDueJobs } from './promote-due-jobs.ts';

export async function claimLimitedJobs(c: PoolConnection, t: Tables, request: ClaimRequest): Promise<LimitedClaim> {
  const { name, now } = request;
  // The row says too whether any of the type's delayed jobs is due, so that a claim with none skips promoting.
  const [row] = await selectRows(
    c,
    `SELECT ${SETTINGS_SELECT}, group_cursor, ${dueDelayedSql(t)} AS due
     FROM ${t.queueSettings} WHERE name = ? FOR UPDATE`,
    [name, sqlDate(now), name],
  );
  if (!row) return { jobs: await claimJobs(c, t, request), paused: false, nextStartAt: null };
  const settings = toFlowState(row);
  if (settings.paused) return { jobs: [], paused: true, nextStartAt: null };
  const nowMs = now.getTime();
  if (settings.heldUntil !== null && settings.heldUntil.getTime() > nowMs) {
    return { jobs: [], paused: false, nextStartAt: settings.heldUntil };
  }
  const rate = rateWindow(settings, nowMs);
  const room = Math.min(request.limit, rate.allowed);
  if (room <= 0) return { jobs: [], paused: false, nextStartAt: rate.nextStartAt };
  // Due delayed jobs move into the waiting range first, as a plain claim's first step moves them.
  if (Number(row.due) === 1) await promoteDueJobs(c, t, name, now);
  const turns = takesTurns(settings);
  const groupCursor = row.group_cursor === null ? null : String(row.group_cursor);
  const picked = turns
    ? await pickInTurns(c, t, request, { ...settings, groupCursor }, room)
    : { rows: await lockReadyJobs(c, t, request, room, settings.concurrency), cursor: groupCursor };
  if (picked.rows.length === 0) return { jobs: [], paused: false, nextStartAt: null };
  // The rows stay locked by this transaction, so they are leased as read.
  await leaseJobs(c, t, picked.rows, request);
  const started = afterStarts(settings, rate, picked.rows.length, nowMs);
  // Only a rate limit's log and the cursor change: a claim under a concurrency limit alone writes nothing more.
  if (settings.rateLimit !== null || turns) {
    await execute(
      c,
      `UPDATE ${t.queueSettings} SET recent_starts = ?, last_turn = last_turn + ?, group_cursor = ? WHERE name = ?`,
      [JSON.stringify(started.recentStarts), picked.rows.length, picked.cursor, name],
    );
  }
  return {
    jobs: picked.rows.map((r) => claimedRecord(r, request)),
    paused: false,
    nextStartAt: started.nextStartAt,
  };
}
