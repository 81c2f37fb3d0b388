import type { AnyBulkWriteOperation, BulkWriteOptions, Filter, FindOneAndUpdateOptions } from 'mongodb';
import type { JobRecord, LeaseRef } from '../../engine/store.ts';
import type { JobError } from '../../jobs.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { heldBy } from './leases.ts';
import { cleanError, type JobDocument, toJobRecord } from './records.ts';
import {
  CHILD_FIELDS,
  cancelDescendants,
  endedChildren,
  type FlowTarget,
  inFlowTransaction,
  settleParents,
} from './settle-parents.ts';

/**
 * The ends of jobs in flows on MongoDB: each one transaction with its parents' settling (settle-parents.ts).
 * The store takes these paths only for jobs its single-document writes left alone (they match jobs without a
 * parent only), so a job outside flows pays nothing for them.
 */

/** A job without a parent: what the store's single-document ends add to their filters. */
export const NOT_A_CHILD = { parentId: { $exists: false } } as const;

/**
 * Completes the held children among `items` (acks the plain completion left alone), as `completeJobs` does,
 * in one transaction with their parents' settling. They are read first, outside it (acks whose leases are
 * gone cost that one read); in it, the parents are written first, so that the transaction's first statement
 * takes its snapshot and the parent at once (no write can come between, see `inFlowTransaction`), then the
 * children, each fenced. A lease lost between the read and the transaction aborts it, and it is read again.
 * Resolves to the ids completed and the names of the parents made ready.
 */
export async function completeHeldChildren(
  target: FlowTarget,
  items: readonly (LeaseRef & { result: string | null })[],
  now: Date,
): Promise<{ ids: string[]; ready: string[] }> {
  for (;;) {
    const docs = await withCallLimit(target.limitMs, (signal) =>
      target.jobs
        .find(
          { _id: { $in: items.map((item) => item.id) }, parentId: { $type: 'string' }, state: 'active' },
          { projection: { ...CHILD_FIELDS, leaseToken: 1, leaseExpiresAt: 1 }, signal },
        )
        .toArray(),
    );
    const byId = new Map(docs.map((doc) => [doc._id, doc]));
    const held = items.flatMap((item) => {
      const doc = byId.get(item.id);
      const filter =
        doc?.leaseToken === item.leaseToken && (doc.leaseExpiresAt ?? now) > now ? heldBy(item, now) : null;
      return doc && filter ? [{ item, filter, doc }] : [];
    });
    if (held.length === 0) return { ids: [], ready: [] };
    const parents = [...new Set(held.map(({ doc }) => String(doc.parentId)))].sort();
    const outcome = await inFlowTransaction(target, parents.join(','), async (tx) => {
      const completed = held.map(({ doc }) => doc);
      const ready = await settleParents(target.jobs, tx, endedChildren(completed, 'completed'), now);
      const writes = held.map(
        ({ item, filter }): AnyBulkWriteOperation<JobDocument> => ({
          updateOne: {
            filter,
            update: {
              $set: { leaseExpiresAt: null, state: 'completed', result: item.result, finishedAt: now, updatedAt: now },
            },
          },
        }),
      );
      const options: Abortable<BulkWriteOptions> = { ordered: false, ...tx };
      const { modifiedCount } = await target.jobs.bulkWrite(writes, options);
      if (modifiedCount === held.length) return { ids: completed.map((doc) => doc._id), ready };
      await tx.session.abortTransaction();
      return null;
    });
    if (outcome) return outcome;
  }
}

/**
 * Ends the held child `held` selects (the plain end left it alone) with `ended` (fields of an update
 * pipeline's `$set`), in one transaction with its parent's settling. Resolves to whether the lease held, and
 * the names of the parents made ready.
 */
export function endHeldChild(
  target: FlowTarget,
  held: Filter<JobDocument>,
  ended: Record<string, unknown>,
  outcome: { end: 'dead'; error: JobError },
  now: Date,
): Promise<{ held: boolean; ready: string[] }> {
  return inFlowTransaction(target, undefined, async (tx) => {
    const options: Abortable<FindOneAndUpdateOptions> = { ...tx, projection: CHILD_FIELDS };
    const doc = await target.jobs.findOneAndUpdate(
      { ...held, parentId: { $type: 'string' } },
      [{ $set: ended }],
      options,
    );
    if (!doc) {
      await tx.session.abortTransaction();
      return { held: false, ready: [] };
    }
    const children = endedChildren([doc], outcome.end, () => outcome.error);
    return { held: true, ready: await settleParents(target.jobs, tx, children, now) };
  });
}

/**
 * `cancelJob` of a job in a flow (a child, or a parent): in one transaction, the job cancelled as `cancelJob`
 * cancels, its unfinished descendants cancelled with it, and its parent settled. Resolves to the job as
 * cancelled (null when it had finished meanwhile), and the names of the parents made ready.
 */
export function cancelInFlow(
  target: FlowTarget,
  live: Filter<JobDocument>,
  cancelled: Partial<JobDocument>,
  now: Date,
): Promise<{ job: JobRecord | null; ready: string[] }> {
  return inFlowTransaction(target, undefined, async (tx) => {
    const options: Abortable<FindOneAndUpdateOptions> = { ...tx, returnDocument: 'after' };
    const doc = await target.jobs.findOneAndUpdate(live, { $set: cancelled }, options);
    if (!doc) {
      await tx.session.abortTransaction();
      return { job: null, ready: [] };
    }
    if ((doc.childCount ?? 0) > 0) await cancelDescendants(target.jobs, tx, [doc._id], now);
    const ready = await settleParents(target.jobs, tx, endedChildren([doc], 'cancelled'), now);
    return { job: toJobRecord(doc), ready };
  });
}

/**
 * Makes each expired child out of attempts among `ids` dead, each in a transaction with its parent's
 * settling: what the sweep's plain dead write (which matches jobs without a parent) left alone. `expired`
 * re-checks the lease's expiry; `dead` is the sweep's update pipeline, which records the child's error
 * (`LEASE_EXPIRED`, or `TIMEOUT` for a lease that ran out at its attempt's deadline); the parent is told that
 * error, as recorded. `limit` bounds the read (the number of ids `expired` names). Resolves to the names of
 * the parents made ready.
 */
export async function sweepExpiredChildren(
  target: FlowTarget,
  expired: Filter<JobDocument>,
  dead: Record<string, unknown>[],
  now: Date,
  limit: number,
): Promise<string[]> {
  const children = await withCallLimit(target.limitMs, (signal) =>
    target.jobs
      .find({ ...expired, parentId: { $type: 'string' } }, { projection: { _id: 1, name: 1 }, limit, signal })
      .toArray(),
  );
  const ready: string[] = [];
  for (const child of children) {
    const settled = await inFlowTransaction(target, undefined, async (tx) => {
      const options: Abortable<FindOneAndUpdateOptions> = {
        ...tx,
        projection: { ...CHILD_FIELDS, error: 1 },
        returnDocument: 'after',
      };
      const doc = await target.jobs.findOneAndUpdate({ ...expired, _id: child._id, name: child.name }, dead, options);
      if (!doc) {
        await tx.session.abortTransaction();
        return [];
      }
      const recorded = doc.error ? cleanError(doc.error) : null;
      return settleParents(
        target.jobs,
        tx,
        endedChildren([doc], 'dead', () => recorded),
        now,
      );
    });
    ready.push(...settled);
  }
  return ready;
}
