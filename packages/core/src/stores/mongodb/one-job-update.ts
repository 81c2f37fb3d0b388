import type { Collection, Filter, FindOneAndUpdateOptions } from 'mongodb';
import type { JobRecord } from '../../engine/store.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { type JobDocument, stringOrNull, toJobRecord } from './records.ts';

/** A job outside flows: no parent, no children. */
export const OUTSIDE_FLOWS = {
  parentId: { $not: { $type: 'string' } },
  childCount: { $not: { $gt: 0 } },
} as const satisfies Filter<JobDocument>;

/**
 * An operator's move of one job no worker holds (promote, rerun, restore): the job's type read by `_id`, then
 * one `findOneAndUpdate` naming it, so the write is targeted (see `idsByName`). `match` is the state the move
 * starts from, checked again by the write: a job claimed, acked or moved meanwhile no longer matches and is
 * left as it is. Resolves to the job as it now is, or `null` when nothing changed.
 */
export async function updateOneJob(
  jobs: Collection<JobDocument>,
  id: string,
  match: Filter<JobDocument>,
  update: Record<string, unknown>[],
  limitMs: number,
): Promise<JobRecord | null> {
  const jobId = stringOrNull(id);
  if (jobId === null) return null;
  const filter: Filter<JobDocument> = { ...match, _id: jobId };
  const found = await withCallLimit(limitMs, (signal) =>
    jobs.findOne(filter, { projection: { _id: 1, name: 1 }, signal }),
  );
  if (!found) return null;
  const doc = await withCallLimit(limitMs, (signal) => {
    const options: Abortable<FindOneAndUpdateOptions> = { returnDocument: 'after', signal };
    return jobs.findOneAndUpdate({ ...filter, name: found.name }, update, options);
  });
  return doc ? toJobRecord(doc) : null;
}
