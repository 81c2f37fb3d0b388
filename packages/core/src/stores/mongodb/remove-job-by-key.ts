import type { Collection, FindOneAndDeleteOptions } from 'mongodb';
import type { JobRecord } from '../../engine/store.ts';
import { NOT_STARTED } from '../shared/not-started.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { OUTSIDE_FLOWS } from './one-job-update.ts';
import { type JobDocument, stringOrNull, toJobRecord } from './records.ts';

/**
 * `AdminStore.removeJobByKey`: one `findOneAndDelete` of the job of `name` holding idempotency key `key`
 * (through the unique `idempotency` index), when it has not started and is outside flows. A claim at the same
 * moment either leased it first, and it no longer matches, or finds it gone.
 */
export async function removeJobByKey(
  jobs: Collection<JobDocument>,
  name: string,
  key: string,
  limitMs: number,
): Promise<JobRecord | null> {
  const jobName = stringOrNull(name);
  const jobKey = stringOrNull(key);
  if (jobName === null || jobKey === null) return null;
  const waiting = { name: jobName, idempotencyKey: jobKey, state: { $in: [...NOT_STARTED] }, ...OUTSIDE_FLOWS };
  const doc = await withCallLimit(limitMs, (signal) => {
    const options: Abortable<FindOneAndDeleteOptions> = { signal };
    return jobs.findOneAndDelete(waiting, options);
  });
  return doc ? toJobRecord(doc) : null;
}
