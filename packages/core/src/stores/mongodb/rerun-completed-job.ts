import type { Collection } from 'mongodb';
import type { JobRecord } from '../../engine/store.ts';
import { ENDED_LEASE } from './leases.ts';
import { OUTSIDE_FLOWS, updateOneJob } from './one-job-update.ts';
import { type JobDocument, orderKeyExpression } from './records.ts';

/**
 * `AdminStore.rerunCompletedJob` (see `updateOneJob`). A completed job outside flows becomes `waiting` and due
 * at `now`, its `orderKey` that of a run at `now`, with its attempts, result, last error, progress, `movedTo`,
 * finish time and lease cleared.
 */
export function rerunCompletedJob(
  jobs: Collection<JobDocument>,
  id: string,
  now: Date,
  limitMs: number,
): Promise<JobRecord | null> {
  const rerun = {
    ...ENDED_LEASE,
    state: 'waiting',
    runAt: now,
    orderKey: orderKeyExpression(now),
    attempts: 0,
    result: null,
    error: null,
    progress: 0,
    movedTo: null,
    workerId: null,
    finishedAt: null,
    updatedAt: now,
  };
  return updateOneJob(jobs, id, { state: 'completed', ...OUTSIDE_FLOWS }, [{ $set: rerun }], limitMs);
}
