import type { InsertOneOptions } from 'mongodb';
import type { ClaimedRecord, ClaimRequest, JobRecord, NewJob } from '../../engine/store.ts';
import { claimCouldTake, handedRecord } from '../shared/inserted-record.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { versionsOf } from './claim-jobs.ts';
import { isDuplicateKeyError } from './errors.ts';
import { claimsHeldBack } from './flow-control.ts';
import type { FlowCollections } from './flow-documents.ts';
import { CLAIM_INDEX, DELAYED_INDEX } from './indexes.ts';
import { toJobDocument, toJobRecord } from './records.ts';

/**
 * `Handoff.insertAndClaimJob`, for a consumer already waiting; `claim` is on the database's clock, under its
 * typed token (see `MongoStore.leaseRequest`). Three reads at once, then one insert: whether the waiting claim
 * could take a job already (one of its type and versions ready, or a delayed one due) or the type's settings
 * hold its claims back; then the job, leased to the claim as `leaseUpdate` leases (active, its first attempt,
 * the claim's token, worker and expiry, the attempt's deadline) when it is due at the claim's time, within its
 * versions, and nothing was found; otherwise waiting, as `insertJobs` inserts it. A job that became ready
 * between the reads and the insert was not ready when they ran, as a claim's own reads would not have seen it.
 * A taken id or key inserts nothing and resolves to `null`: the engine then inserts the job as usual, which
 * answers with the holder. Each call is abandoned after the store's call limit.
 */
export async function insertAndClaimJob(
  c: FlowCollections,
  job: NewJob,
  claim: ClaimRequest,
): Promise<{ job: JobRecord; claimed: ClaimedRecord | null } | null> {
  const handed = claimCouldTake(job, claim) && !(await claimFindsWork(c, claim)) ? handedRecord(job, claim) : null;
  const doc = toJobDocument(job);
  if (handed) {
    // The lease's fields as a claim sets them (`leaseUpdate`): a job without a time limit gets a `null` deadline.
    const { state, attempts, leaseToken, workerId, leaseExpiresAt, attemptDeadline, updatedAt } = handed;
    Object.assign(doc, { state, attempts, leaseToken, workerId, leaseExpiresAt, updatedAt });
    doc.attemptDeadline = attemptDeadline ?? null;
  }
  try {
    await withCallLimit(c.limitMs, (signal) => {
      const options: Abortable<InsertOneOptions> = { signal };
      return c.jobs.insertOne(doc, options);
    });
  } catch (error) {
    if (isDuplicateKeyError(error)) return null;
    throw error;
  }
  const record = toJobRecord(doc);
  return { job: record, claimed: handed ? record : null };
}

/** Whether a job `claim` could take is ready or due already, or its type's settings hold its claims back. */
async function claimFindsWork(c: FlowCollections, claim: ClaimRequest): Promise<boolean> {
  const name = String(claim.name);
  const version = versionsOf(claim);
  if (version === null) return true;
  const ready = { state: 'waiting' as const, name, version, runAt: { $lte: claim.now } };
  const due = { state: 'delayed' as const, name, runAt: { $lte: claim.now } };
  const found = await Promise.all([
    claimsHeldBack(c, name, claim.now),
    withCallLimit(c.limitMs, (signal) =>
      c.jobs.findOne(ready, { projection: { _id: 1 }, hint: CLAIM_INDEX, signal }),
    ).then((doc) => doc !== null),
    withCallLimit(c.limitMs, (signal) =>
      c.jobs.findOne(due, { projection: { _id: 1 }, hint: DELAYED_INDEX, signal }),
    ).then((doc) => doc !== null),
  ]);
  return found.some(Boolean);
}
