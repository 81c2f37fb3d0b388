import type { AnyBulkWriteOperation, BulkWriteOptions, Collection, UpdateOptions } from 'mongodb';
import { CHILD_FAILED_CODE, FLOW_CANCELLED_CODE } from '../../engine/flow-store.ts';
import { notStartedState } from '../shared/not-started.ts';
import { idsByName } from './by-name.ts';
import type { Abortable } from './call-limit.ts';
import { CHILDREN_INDEX, IN_CHILDREN_INDEX } from './indexes.ts';
import { ENDED_LEASE } from './leases.ts';
import { type JobDocument, orderKeyExpression } from './records.ts';
import type { InTransaction } from './settle-parents.ts';

/**
 * The update pipeline of a job retried at `now` (`retryDeadJobs`, and a child revived with its parent):
 * waiting and due at `now`, its attempts reset, its lease and finish cleared, its errors kept.
 */
export function retriedAt(now: Date): Record<string, unknown>[] {
  return [
    {
      $set: {
        ...ENDED_LEASE,
        state: 'waiting',
        runAt: now,
        orderKey: orderKeyExpression(now),
        attempts: 0,
        workerId: null,
        finishedAt: null,
        updatedAt: now,
      },
    },
  ];
}

/** The stored states of a job that has not finished. */
const UNFINISHED = ['delayed', 'waiting', 'waiting-children', 'active'] as const;

/**
 * What retrying dead children does to the parents that died of a child (`FlowStore`, "Retrying a dead
 * child"), in the retry's transaction, after the children were made waiting. Of `parents` (ids and names),
 * those `dead` with a `CHILD_FAILED` error are revived: their descendants cancelled with `FLOW_CANCELLED` go
 * back to waiting, level by level through the children index (due at `now`, attempts reset, the lease ended,
 * the error kept); then each parent on the way counts its children not ended: above 0 it is
 * `waiting-children` again, at 0 waiting, `finishedAt` cleared either way. A revived parent that is a child
 * revives its own parent in turn, when that one died of a child. Resolves to the names of the parents made
 * ready (waiting, due at `now`).
 */
export async function reviveParents(
  jobs: Collection<JobDocument>,
  tx: InTransaction,
  parents: readonly { id: string; name: string }[],
  now: Date,
): Promise<string[]> {
  const ready: string[] = [];
  for (let level = [...parents]; level.length > 0; ) {
    const dead = await jobs
      .find(
        { _id: { $in: level.map((parent) => parent.id) }, state: 'dead', 'error.code': CHILD_FAILED_CODE },
        { projection: { _id: 1, name: 1, parentId: 1, parentName: 1 }, ...tx },
      )
      .toArray();
    if (dead.length === 0) break;
    const revived = [...dead, ...(await reviveDescendants(jobs, tx, dead, now))];
    ready.push(...(await recountChildren(jobs, tx, revived, now)));
    level = dead.flatMap((doc) =>
      typeof doc.parentId === 'string' && typeof doc.parentName === 'string'
        ? [{ id: doc.parentId, name: doc.parentName }]
        : [],
    );
  }
  return ready;
}

/** The descendants of `parents` cancelled with their flow, back to waiting; resolves to the parents among them. */
async function reviveDescendants(
  jobs: Collection<JobDocument>,
  tx: InTransaction,
  parents: readonly Pick<JobDocument, '_id'>[],
  now: Date,
): Promise<Pick<JobDocument, '_id' | 'name'>[]> {
  const revivedParents: Pick<JobDocument, '_id' | 'name'>[] = [];
  const waiting = retriedAt(now);
  for (let level = parents.map((doc) => doc._id); level.length > 0; ) {
    const cancelled = { state: 'cancelled' as const, 'error.code': FLOW_CANCELLED_CODE };
    const found = await jobs
      .find(
        { parentId: { $in: level, ...IN_CHILDREN_INDEX }, ...cancelled },
        { projection: { _id: 1, name: 1, childCount: 1 }, hint: CHILDREN_INDEX, ...tx },
      )
      .toArray();
    if (found.length === 0) break;
    const writes = [...idsByName(found)].map(
      ([name, ids]): AnyBulkWriteOperation<JobDocument> => ({
        updateMany: { filter: { _id: { $in: ids }, name, ...cancelled }, update: waiting },
      }),
    );
    const options: Abortable<BulkWriteOptions> = { ordered: false, ...tx };
    await jobs.bulkWrite(writes, options);
    const below = found.filter((doc) => (doc.childCount ?? 0) > 0);
    revivedParents.push(...below);
    level = below.map((doc) => doc._id);
  }
  return revivedParents;
}

/**
 * Each of `parents` `waiting-children` with its children not ended counted, or waiting when none is left, its
 * `finishedAt` cleared. Resolves to the names of those made ready.
 */
async function recountChildren(
  jobs: Collection<JobDocument>,
  tx: InTransaction,
  parents: readonly Pick<JobDocument, '_id' | 'name'>[],
  now: Date,
): Promise<string[]> {
  const unfinished = await jobs
    .find(
      { parentId: { $in: parents.map((doc) => doc._id), ...IN_CHILDREN_INDEX }, state: { $in: [...UNFINISHED] } },
      { projection: { _id: 0, parentId: 1 }, hint: CHILDREN_INDEX, ...tx },
    )
    .toArray();
  const pending = new Map<string, number>();
  for (const doc of unfinished) pending.set(String(doc.parentId), (pending.get(String(doc.parentId)) ?? 0) + 1);
  const runAts = await jobs
    .find({ _id: { $in: parents.map((doc) => doc._id) } }, { projection: { _id: 1, name: 1, runAt: 1 }, ...tx })
    .toArray();
  const ready: string[] = [];
  const options: Abortable<UpdateOptions> = { ...tx };
  for (const doc of runAts) {
    const left = pending.get(doc._id) ?? 0;
    const state = left > 0 ? 'waiting-children' : notStartedState(doc.runAt, now);
    await jobs.updateOne(
      { _id: doc._id, name: doc.name },
      { $set: { state, pendingChildren: left, finishedAt: null, updatedAt: now } },
      options,
    );
    if (state === 'waiting') ready.push(doc.name);
  }
  return ready;
}
