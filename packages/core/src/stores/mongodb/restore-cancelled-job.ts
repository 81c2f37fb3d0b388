import type { Collection } from 'mongodb';
import type { JobRecord } from '../../engine/store.ts';
import { OUTSIDE_FLOWS, updateOneJob } from './one-job-update.ts';
import type { JobDocument } from './records.ts';

/**
 * `AdminStore.restoreCancelledJob` (see `updateOneJob`). A cancelled job that never started (no attempt),
 * outside flows, is not started again: `delayed` when its run time is after `now`, else `waiting`, keeping
 * its run time and `orderKey`.
 */
export function restoreCancelledJob(
  jobs: Collection<JobDocument>,
  id: string,
  now: Date,
  limitMs: number,
): Promise<JobRecord | null> {
  const restored = {
    state: { $cond: [{ $gt: ['$runAt', now] }, 'delayed', 'waiting'] },
    finishedAt: null,
    updatedAt: now,
  };
  return updateOneJob(jobs, id, { state: 'cancelled', attempts: 0, ...OUTSIDE_FLOWS }, [{ $set: restored }], limitMs);
}
