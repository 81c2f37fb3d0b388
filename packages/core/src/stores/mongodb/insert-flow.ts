import {
  BSON,
  type BulkWriteOptions,
  type Collection,
  type Document,
  type Filter,
  type FindCursor,
  type FindOptions,
  type UpdateOptions,
} from 'mongodb';
import type {
  ChildrenPageQuery,
  ChildState,
  HeldChildrenPage,
  InsertOutcome,
  JobRecord,
  LeaseRef,
  NewJob,
} from '../../engine/store.ts';
import { keyExpired } from '../shared/deduplication.ts';
import { directChildren, insertedFlowRecord } from '../shared/flow-records.ts';
import { engineState } from '../shared/not-started.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { isDuplicateKeyError } from './errors.ts';
import { CHILDREN_INDEX, IDEMPOTENCY_INDEX, IN_CHILDREN_INDEX } from './indexes.ts';
import { keyLetGo } from './key-let-go.ts';
import { ENDED_LEASE } from './leases.ts';
import {
  CHILD_OUTCOME_FIELDS,
  type JobDocument,
  projectionFor,
  toChildOutcome,
  toJobDocument,
  toJobRecord,
} from './records.ts';
import { type FlowTarget, type InTransaction, inFlowTransaction } from './settle-parents.ts';

/**
 * The documents of a flow's jobs: each as `toJobDocument` makes it, with its parent's id and name (the name
 * so that writes to the parent name its type) and policy, and, for a parent inserted with children,
 * `waiting-children` with its count of them. `names` knows the names of parents not in `jobs`.
 */
function flowDocuments(jobs: readonly NewJob[], names: Map<string, string>): JobDocument[] {
  for (const job of jobs) names.set(job.id, job.name);
  return jobs.map((job) => {
    const doc = toJobDocument(job);
    const children = job.pendingChildren ?? 0;
    if (children > 0)
      Object.assign(doc, { state: 'waiting-children', childCount: children, pendingChildren: children });
    if (typeof job.parentId === 'string') {
      Object.assign(doc, {
        parentId: job.parentId,
        parentName: names.get(job.parentId),
        onFailure: job.onFailure ?? 'fail-parent',
      });
    }
    return doc;
  });
}

/** Inserts `docs` in the transaction, ordered: the first failure (a taken id) fails it all. */
async function insertDocuments(jobs: Collection<JobDocument>, tx: InTransaction, docs: JobDocument[]): Promise<void> {
  const options: Abortable<BulkWriteOptions> = { ordered: true, ...tx };
  if (docs.length > 0) await jobs.insertMany(docs, options);
}

/**
 * `FlowStore.insertFlow`: one transaction that inserts every job of the flow, with no read ahead of it. A taken
 * id, or any other failure, aborts it and nothing of the flow is stored. After the abort, the job holding the
 * root's id, when one does, is the answer, whatever it is (the engine tells whether it is the same job); when the
 * root's idempotency key is the one taken, `keyHolderOf` answers: the retained holder, or `KeyHolderGone`.
 */
export async function insertFlow(target: FlowTarget, jobs: readonly NewJob[]): Promise<InsertOutcome> {
  const [root] = jobs;
  if (root === undefined) throw new Error('insertFlow needs the root job');
  try {
    return await inFlowTransaction(target, undefined, async (tx): Promise<InsertOutcome> => {
      await insertDocuments(target.jobs, tx, flowDocuments(jobs, new Map()));
      return { job: insertedFlowRecord(root), created: true };
    });
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    if (isTakenId(error)) {
      const holder = await idHolderOf(target, root);
      if (holder) return { job: holder, created: false };
      throw error;
    }
    if (root.idempotencyKey === null) throw error;
  }
  return keyHolderOf(target, root);
}

/** The job holding `root`'s id, or `null` (an id below the root was the one taken). */
async function idHolderOf(target: FlowTarget, root: NewJob): Promise<JobRecord | null> {
  const holder = await withCallLimit(target.limitMs, (signal) => target.jobs.findOne({ _id: root.id }, { signal }));
  return holder ? toJobRecord(holder) : null;
}

/**
 * The answer to a flow whose `root`'s key is taken: its retained holder, `created: false`; or no job
 * (`KeyHolderGone`, and the engine tries again) when the holder is gone, or let its key expire, which it then
 * lets go of.
 */
async function keyHolderOf(target: FlowTarget, root: NewJob): Promise<InsertOutcome> {
  const keyHeld = { name: root.name, idempotencyKey: { $eq: root.idempotencyKey, $type: 'string' as const } };
  const holder = await withCallLimit(target.limitMs, (signal) =>
    target.jobs.findOne(keyHeld, { hint: IDEMPOTENCY_INDEX, signal }),
  );
  if (!holder) return { job: null, created: false };
  const record = toJobRecord(holder);
  if (!keyExpired(record, root)) return { job: record, created: false };
  await withCallLimit(target.limitMs, (signal) => {
    const released: Abortable<UpdateOptions> = { hint: IDEMPOTENCY_INDEX, signal };
    return target.jobs.updateOne(
      { ...keyHeld, ...keyLetGo(root.createdAt) },
      { $set: { idempotencyKey: null } },
      released,
    );
  });
  return { job: null, created: false };
}

/** Whether a duplicate-key failure is on `_id` (a taken id), not on the idempotency key. */
function isTakenId(error: unknown): boolean {
  const pattern = (error as { keyPattern?: Record<string, unknown> }).keyPattern;
  return pattern !== undefined && '_id' in pattern;
}

/**
 * `FlowStore.waitForChildren` for the job `held` selects (see `heldBy`): one transaction. One fenced write
 * ends the attempt uncounted and the lease, and parks the job `waiting-children` on its direct children in
 * `children`; then they are inserted. Resolves to whether the lease held; when it did not, nothing changed.
 */
export function waitForChildren(
  target: FlowTarget,
  lease: LeaseRef,
  held: Filter<JobDocument>,
  children: readonly NewJob[],
  now: Date,
): Promise<boolean> {
  const direct = directChildren(children, lease.id);
  return inFlowTransaction(target, undefined, async (tx) => {
    const options: Abortable<UpdateOptions> = { ...tx };
    const { matchedCount } = await target.jobs.updateOne(
      held,
      {
        $set: { ...ENDED_LEASE, state: 'waiting-children', workerId: null, pendingChildren: direct, updatedAt: now },
        $inc: { attempts: -1, childCount: direct },
      },
      options,
    );
    if (matchedCount === 0) {
      await tx.session.abortTransaction();
      return false;
    }
    await insertDocuments(target.jobs, tx, flowDocuments(children, new Map([[lease.id, String(held.name)]])));
    return true;
  });
}

/** The children of `parentId` after `afterId` when it is given, as the children index holds them. */
function childrenOf(parentId: string, afterId: string | undefined): Filter<JobDocument> {
  const filter: Filter<JobDocument> = { parentId: { $eq: parentId, ...IN_CHILDREN_INDEX } };
  if (typeof afterId === 'string') filter._id = { $gt: afterId };
  return filter;
}

/** `FlowStore.listChildren`: one read through the children index, by id. */
export async function listChildren(
  jobs: Collection<JobDocument>,
  parentId: string,
  page: ChildrenPageQuery,
  limitMs: number,
): Promise<JobRecord[]> {
  const limit = Math.floor(page.limit);
  if (!(limit > 0) || typeof parentId !== 'string') return [];
  const filter = childrenOf(parentId, page.afterId);
  const { docs } = await withCallLimit(limitMs, (signal) =>
    readPage(
      jobs.find(filter, { sort: { _id: 1 }, limit, hint: CHILDREN_INDEX, projection: projectionFor(page), signal }),
      limit,
      page.maxBytes,
    ),
  );
  return docs.map((doc) => toJobRecord(doc as JobDocument));
}

/** `FlowStore.listChildStates`: `listChildren`'s read, each child projected to its `ChildState`. */
export async function listChildStates(
  jobs: Collection<JobDocument>,
  parentId: string,
  page: { afterId?: string; limit: number },
  limitMs: number,
): Promise<ChildState[]> {
  const limit = Math.floor(page.limit);
  if (!(limit > 0) || typeof parentId !== 'string') return [];
  const filter = childrenOf(parentId, page.afterId);
  const projection = { _id: 1, name: 1, state: 1, runAt: 1 };
  const docs = await withCallLimit(limitMs, (signal) =>
    jobs.find(filter, { sort: { _id: 1 }, limit, hint: CHILDREN_INDEX, projection, signal }).toArray(),
  );
  return docs.map((doc) => ({ id: doc._id, name: doc.name, state: engineState(doc.state), runAt: doc.runAt }));
}

/**
 * `FlowStore.listHeldChildren` for the job `held` selects (see `heldBy`; `null` for a lease this store did not
 * issue): the held job, by its id, and a page of its children through the children index, each projected to
 * what a parent's handler reads, side by side; `null` when the held job is not found, its children dropped.
 */
export async function listHeldChildren(
  jobs: Collection<JobDocument>,
  held: Filter<JobDocument> | null,
  page: ChildrenPageQuery,
  limitMs: number,
): Promise<HeldChildrenPage | null> {
  if (held === null) return null;
  const limit = Math.floor(page.limit);
  const filter = childrenOf(String(held._id), page.afterId);
  const options: FindOptions = {
    sort: { _id: 1 },
    limit: limit + 1,
    hint: CHILDREN_INDEX,
    projection: CHILD_OUTCOME_FIELDS,
  };
  const [parent, read] = await withCallLimit(limitMs, (signal) =>
    Promise.all([
      jobs.findOne(held, { projection: { _id: 1 }, signal }),
      limit > 0 ? readPage(jobs.find(filter, { ...options, signal }), limit, page.maxBytes) : NO_PAGE,
    ]),
  );
  if (parent === null) return null;
  return { children: read.docs.map((doc) => toChildOutcome(doc as JobDocument)), more: read.more };
}

const NO_PAGE = Promise.resolve({ docs: [], more: false });

/**
 * The documents of `cursor` up to `limit`, and up to the first whose BSON size brings their total to `maxBytes`
 * when given; and whether the cursor held more. The cursor is read batch by batch and closed there, so the
 * documents past the page are never all fetched.
 */
async function readPage<T extends Document>(
  cursor: FindCursor<T>,
  limit: number,
  maxBytes: number | undefined,
): Promise<{ docs: T[]; more: boolean }> {
  const docs: T[] = [];
  let bytes = 0;
  try {
    for await (const doc of cursor) {
      if (docs.length >= limit || (maxBytes !== undefined && bytes >= maxBytes)) return { docs, more: true };
      docs.push(doc);
      if (maxBytes !== undefined) bytes += BSON.calculateObjectSize(doc);
    }
    return { docs, more: false };
  } finally {
    await cursor.close();
  }
}
