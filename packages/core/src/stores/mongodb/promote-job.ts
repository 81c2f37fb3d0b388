import type { Collection } from 'mongodb';
import type { JobRecord } from '../../engine/store.ts';
import { NOT_STARTED } from '../shared/not-started.ts';
import { type JobDocument, orderKeyExpression, stringOrNull, toJobRecord } from './records.ts';

/**
 * `Store.promoteJob`: the job's type read by `_id`, then one `findOneAndUpdate` naming it, so the write
 * is targeted (see `idsByName`). A job not started and due after `now` (`waiting`, or `delayed` outside
 * the claim index) becomes `waiting` and due at `now`, its `orderKey` that of a run at `now`; a job
 * claimed, cancelled or due meanwhile does not match and is left as it is.
 */
export async function promoteJob(jobs: Collection<JobDocument>, id: string, now: Date): Promise<JobRecord | null> {
  const jobId = stringOrNull(id);
  if (jobId === null) return null;
  const notDue = { _id: jobId, state: { $in: [...NOT_STARTED] }, runAt: { $gt: now } };
  const found = await jobs.findOne(notDue, { projection: { _id: 1, name: 1 } });
  if (!found) return null;
  const doc = await jobs.findOneAndUpdate(
    { ...notDue, name: found.name },
    [{ $set: { state: 'waiting', runAt: now, orderKey: orderKeyExpression(now), updatedAt: now } }],
    { returnDocument: 'after' },
  );
  return doc ? toJobRecord(doc) : null;
}
