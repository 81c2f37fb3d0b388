import type { Collection, FindOneAndUpdateOptions } from 'mongodb';
import type { JobRecord } from '../../engine/store.ts';
import { NOT_STARTED } from '../shared/not-started.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { type JobDocument, orderKeyExpression, stringOrNull, toJobRecord } from './records.ts';

/**
 * `Store.promoteJob`: the job's type read by `_id`, then one `findOneAndUpdate` naming it, so the write
 * is targeted (see `idsByName`). A job not started and due after `now` (`waiting`, or `delayed` outside
 * the claim index) becomes `waiting` and due at `now`, its `orderKey` that of a run at `now`; a job
 * claimed, cancelled or due meanwhile does not match and is left as it is.
 */
export async function promoteJob(
  jobs: Collection<JobDocument>,
  id: string,
  now: Date,
  limitMs: number,
): Promise<JobRecord | null> {
  const jobId = stringOrNull(id);
  if (jobId === null) return null;
  const notDue = { _id: jobId, state: { $in: [...NOT_STARTED] }, runAt: { $gt: now } };
  const found = await withCallLimit(limitMs, (signal) =>
    jobs.findOne(notDue, { projection: { _id: 1, name: 1 }, signal }),
  );
  if (!found) return null;
  const doc = await withCallLimit(limitMs, (signal) => {
    const options: Abortable<FindOneAndUpdateOptions> = { returnDocument: 'after', signal };
    return jobs.findOneAndUpdate(
      { ...notDue, name: found.name },
      [{ $set: { state: 'waiting', runAt: now, orderKey: orderKeyExpression(now), updatedAt: now } }],
      options,
    );
  });
  return doc ? toJobRecord(doc) : null;
}
