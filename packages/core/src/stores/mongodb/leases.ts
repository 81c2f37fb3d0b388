import type { Filter } from 'mongodb';
import type { LeaseRef } from '../../engine/store.ts';
import { type JobDocument, stringOrNull } from './documents.ts';

/** The fields that end a job's lease. */
export const ENDED_LEASE = { leaseToken: null, leaseExpiresAt: null };

/** The filter of a fenced operation: the job is held by this unexpired lease. */
export function heldBy(lease: LeaseRef, now: Date): Filter<JobDocument> | null {
  const id = stringOrNull(lease.id);
  const token = stringOrNull(lease.leaseToken);
  if (id === null || token === null) return null;
  return { _id: id, leaseToken: token, state: 'active', leaseExpiresAt: { $gt: now } };
}
