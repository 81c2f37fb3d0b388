/**
 * Claim jobs: `Store.claimJobs` of a type without settings, three statements in one short READ COMMITTED
 * transaction (the caller's): promote the type's due delayed jobs (promote-due-jobs.ts), lock up to
 * `request.limit` ready jobs in claim order (lock-ready-jobs.ts), lease them (lease-jobs.ts).
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
  // Every due job, so that none ranked before a claimed one is left delayed.
  await promoteDueJobs(c, t, request.name, request.now);
  const locked = await lockReadyJobs(c, t, request, request.limit, null, { heldBack });
  if (locked.length === 0) return [];
  if (heldBack && Number(locked[0]?.held) === 1) return null;
  await leaseJobs(
    c,
    t,
    locked.map((row) => String(row.id)),
    request,
  );
  return locked.map((row) => claimedRecord(row, request));
}
