import type { BulkWriteOptions, Filter, UpdateOptions } from 'mongodb';
import { idsByName } from './by-name.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { NOT_A_CHILD } from './end-children.ts';
import { type JobDocument, stringOrNull } from './records.ts';
import { retriedAt, reviveParents } from './revive-parents.ts';
import { type FlowTarget, inFlowTransaction } from './settle-parents.ts';

/**
 * `Store.retryDeadJobs` on MongoDB: the dead jobs `target` names made waiting again, fresh attempts. Jobs outside
 * flows first, with no read ahead of the write; then the dead children, each with the parent that died of it
 * revived, in one transaction. Resolves to how many it retried and the names of the parents made ready, which
 * the caller announces once this has committed.
 */
export async function retryDeadJobs(
  target: FlowTarget,
  named: { name?: string; ids?: readonly string[] },
  now: Date,
): Promise<{ retried: number; ready: string[] }> {
  const filter: Filter<JobDocument> = { state: 'dead' };
  if (named.name !== undefined) filter.name = stringOrNull(named.name) ?? { $in: [] };
  if (named.ids !== undefined) filter._id = { $in: named.ids.filter((id) => typeof id === 'string') };
  const retried = retriedAt(now);
  const plain = await retryDeadOutsideFlows(target, { ...filter, ...NOT_A_CHILD }, retried);
  const children = await withCallLimit(target.limitMs, (signal) =>
    target.jobs
      .find({ ...filter, parentId: { $type: 'string' } }, { projection: { parentId: 1, parentName: 1 }, signal })
      .toArray(),
  );
  if (children.length === 0) return { retried: plain, ready: [] };
  const inFlows = await retryDeadInFlows(target, filter, retried, children, now);
  return { retried: plain + inFlows.count, ready: inFlows.ready };
}

/** `retryDeadJobs` of the jobs `filter` matches, none of them a child: one targeted write per job type. */
async function retryDeadOutsideFlows(
  { jobs, limitMs }: FlowTarget,
  filter: Filter<JobDocument>,
  retried: Record<string, unknown>[],
): Promise<number> {
  if (filter.name !== undefined) {
    const { modifiedCount } = await withCallLimit(limitMs, (signal) => {
      const options: Abortable<UpdateOptions> = { signal };
      return jobs.updateMany(filter, retried, options);
    });
    return modifiedCount;
  }
  // Ids without a name: their names first, so each write is targeted (see `idsByName`).
  const found = await withCallLimit(limitMs, (signal) =>
    jobs.find(filter, { projection: { _id: 1, name: 1 }, signal }).toArray(),
  );
  if (found.length === 0) return 0;
  const writes = [...idsByName(found)].map(([name, ids]) => ({
    updateMany: { filter: { ...filter, name, _id: { $in: ids } }, update: retried },
  }));
  const { modifiedCount } = await withCallLimit(limitMs, (signal) => {
    const options: Abortable<BulkWriteOptions> = { ordered: false, signal };
    return jobs.bulkWrite(writes, options);
  });
  return modifiedCount;
}

/**
 * `retryDeadJobs` when dead children are among the jobs: in one transaction, the jobs made waiting and the
 * parents that died of a child revived (see `reviveParents`).
 */
async function retryDeadInFlows(
  target: FlowTarget,
  filter: Filter<JobDocument>,
  retried: Record<string, unknown>[],
  children: readonly Pick<JobDocument, 'parentId' | 'parentName'>[],
  now: Date,
): Promise<{ count: number; ready: string[] }> {
  const parents = children.flatMap((doc) =>
    typeof doc.parentId === 'string' && typeof doc.parentName === 'string'
      ? [{ id: doc.parentId, name: doc.parentName }]
      : [],
  );
  return inFlowTransaction(target, undefined, async (tx) => {
    const found = await target.jobs.find(filter, { projection: { _id: 1, name: 1 }, ...tx }).toArray();
    const writes = [...idsByName(found)].map(([name, ids]) => ({
      updateMany: { filter: { ...filter, name, _id: { $in: ids } }, update: retried },
    }));
    const options: Abortable<BulkWriteOptions> = { ordered: false, ...tx };
    const { modifiedCount } = await target.jobs.bulkWrite(writes, options);
    return { count: modifiedCount, ready: await reviveParents(target.jobs, tx, parents, now) };
  });
}
