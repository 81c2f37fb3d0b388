import type { Collection } from 'mongodb';
import type { JobRecord } from '../../engine/store.ts';
import { NOT_STARTED } from '../shared/not-started.ts';
import { updateOneJob } from './one-job-update.ts';
import { type JobDocument, orderKeyExpression } from './records.ts';

/**
 * `Store.promoteJob` (see `updateOneJob`). A job not started and due after `now` (`waiting`, or `delayed`
 * outside the claim index) becomes `waiting` and due at `now`, its `orderKey` that of a run at `now`; a job
 * claimed, cancelled or due meanwhile does not match and is left as it is.
 */
export function promoteJob(
  jobs: Collection<JobDocument>,
  id: string,
  now: Date,
  limitMs: number,
): Promise<JobRecord | null> {
  const notDue = { state: { $in: [...NOT_STARTED] }, runAt: { $gt: now } };
  const update = [{ $set: { state: 'waiting', runAt: now, orderKey: orderKeyExpression(now), updatedAt: now } }];
  return updateOneJob(jobs, id, notDue, update, limitMs);
}
