/**
 * Claim jobs: `Store.claimJobs` of a type without settings, two statements in one short READ COMMITTED
 * transaction (the caller's): lock up to `request.limit` ready jobs in claim order (lock-ready-jobs.ts), a read
 * that also says whether any of the type's delayed jobs is due, and lease them (lease-jobs.ts). Only when one is
 * due, or no job is ready, are the due jobs promoted first (promote-due-jobs.ts) and the ready jobs locked again.
 *
 * Returns what each worker is handed, in claim order, read by the locking statement, nothing read back.
 * Guarantees: each job is leased to one claim at a time (SKIP LOCKED, then the lease in the same
 * transaction); no transaction is held while a job runs.
 */
import type { PoolConnection } from 'mysql2/promise';
import type { ClaimedRecord, ClaimRequest } from '../../../engine/store.ts';
import { claimedRecord } from '../records.ts';
import type { Tables } from '../tables.ts';
import { leaseJobs } from './lease-jobs.ts';
import { lockReadyJobs } from './lock-ready-jobs.ts';
import { promoteDueJobs } from './promote-due-jobs.ts';

export async function claimJobs(c: PoolConnection, t: Tables, request: ClaimRequest): Promise<ClaimedRecord[]> {
  return (await claimJobsUnless(c, t, request, false)) ?? [];
}

/**
 * `FlowControlStore.claimJobsUnlessHeld`: `claimJobs`, whose locking read also reads whether the type's settings
 * row holds its claims back (`heldBackSql`). When it does, nothing is leased (the transaction's end lets go of
 * the rows it locked) and it resolves to `null`; when no job is ready, to `[]`, whatever the settings say.
 */
export function claimJobsUnlessHeld(
  c: PoolConnection,
  t: Tables,
  request: ClaimRequest,
): Promise<ClaimedRecord[] | null> {
  return claimJobsUnless(c, t, request, true);
}

async function claimJobsUnless(
  c: PoolConnection,
  t: Tables,
  request: ClaimRequest,
  heldBack: boolean,
): Promise<ClaimedRecord[] | null> {
  let locked = await lockReadyJobs(c, t, request, request.limit, null, { heldBack, dueDelayed: true });
  if (heldBack && Number(locked[0]?.held) === 1) return null;
  // Every due delayed job is promoted before any job is leased, so that none ranked before a claimed one is left
  // delayed. The locking read says whether one is due; a read that found no job ready promotes to find out.
  const mayBeDue = locked.length === 0 || Number(locked[0]?.due) === 1;
  if (mayBeDue && (await promoteDueJobs(c, t, request.name, request.now)) > 0) {
    locked = await lockReadyJobs(c, t, request, request.limit, null, { heldBack });
    if (heldBack && Number(locked[0]?.held) === 1) return null;
  }
  if (locked.length === 0) return [];
  await leaseJobs(c, t, locked, request);
  return locked.map((row) => claimedRecord(row, request));
}
