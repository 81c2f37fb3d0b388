import type { FindOneAndUpdateOptions } from 'mongodb';
import type { JobRecord } from '../../engine/store.ts';
import { NOT_STARTED } from '../shared/not-started.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { cancelInFlow } from './end-children.ts';
import { ENDED_LEASE } from './leases.ts';
import { stringOrNull, toJobRecord } from './records.ts';
import type { FlowTarget } from './settle-parents.ts';

/** The states a job can be cancelled in: not yet finished. */
const LIVE_STATES = [...NOT_STARTED, 'waiting-children', 'active'] as const;

/**
 * `Store.cancelJob` at `now`: a job not yet finished is cancelled, with its lease ended; a job in a flow (a child,
 * or a parent that has had children) with its descendants and its parent's settling, in one transaction. The job
 * as cancelled, or `null` when none is live under `id`; and the parents the cancel made ready.
 */
export async function cancelJob(
  target: FlowTarget,
  id: string,
  now: Date,
): Promise<{ job: JobRecord | null; ready: readonly string[] }> {
  const jobId = stringOrNull(id);
  if (jobId === null) return { job: null, ready: [] };
  // Its name first, so the write is targeted (see `idsByName`).
  const live = { _id: jobId, state: { $in: LIVE_STATES } };
  const found = await withCallLimit(target.limitMs, (signal) =>
    target.jobs.findOne(live, { projection: { _id: 1, name: 1, parentId: 1, childCount: 1 }, signal }),
  );
  if (!found) return { job: null, ready: [] };
  const cancelled = { ...ENDED_LEASE, state: 'cancelled' as const, finishedAt: now, updatedAt: now };
  if (typeof found.parentId === 'string' || (found.childCount ?? 0) > 0) {
    return cancelInFlow(target, { ...live, name: found.name }, cancelled, now);
  }
  const doc = await withCallLimit(target.limitMs, (signal) => {
    const options: Abortable<FindOneAndUpdateOptions> = { returnDocument: 'after', signal };
    return target.jobs.findOneAndUpdate({ ...live, name: found.name }, { $set: cancelled }, options);
  });
  return { job: doc ? toJobRecord(doc) : null, ready: [] };
}
