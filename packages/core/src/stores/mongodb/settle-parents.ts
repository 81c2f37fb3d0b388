import type {
  AnyBulkWriteOperation,
  BulkWriteOptions,
  ClientSession,
  Collection,
  FindOneAndUpdateOptions,
  MongoClient,
  UpdateOptions,
  WriteConcernSettings,
} from 'mongodb';
import { childFailedError, flowCancelledError } from '../../engine/flow-store.ts';
import { WorkqError } from '../../errors.ts';
import type { JobError } from '../../jobs.ts';
import { byParent, failingChild, type EndedChild as SharedEndedChild } from '../shared/flow-records.ts';
import { notStartedState } from '../shared/not-started.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { isTransactionUnsupportedError, isWriteConflict } from './errors.ts';
import { CHILDREN_INDEX, IN_CHILDREN_INDEX } from './indexes.ts';
import { ENDED_LEASE } from './leases.ts';
import { appendedErrors, cleanError, type JobDocument, literal } from './records.ts';
import { commitWithin, runTransaction } from './transactions.ts';

/** Where a flow's transaction runs. */
export interface FlowTarget {
  client: MongoClient;
  jobs: Collection<JobDocument>;
  /** The write concern of every write (see `durableWrites`). */
  writeConcern: WriteConcernSettings;
  /** Host list for error messages (never credentials). */
  hosts: string;
  /** How long the transaction may take before it is abandoned (see `runTransaction`). */
  limitMs: number;
}

/** The session and signal every statement of a flow's transaction carries. */
export interface InTransaction {
  session: ClientSession;
  signal: AbortSignal;
}

/**
 * Runs `work` as one transaction (`runTransaction`): committed with `commitWithin` unless `work` aborted it
 * (having changed nothing worth a majority write). Transactions of this process with the same `turn` (the
 * parents they settle) run one after the other: they would only meet on those parents in the database. A write that meets a document another transaction holds
 * (two children of one parent ending at once) aborts it with `WriteConflict`, which the driver answers by
 * running it again, after a jittered pause, on a new snapshot. A standalone server, which has no
 * transactions, is refused with `UNAVAILABLE`, not retryable.
 */
export function inFlowTransaction<T>(
  target: FlowTarget,
  turn: string | undefined,
  work: (tx: InTransaction) => Promise<T>,
): Promise<T> {
  if (turn === undefined) return runFlowTransaction(target, work);
  let byKey = turns.get(target.client);
  if (!byKey) {
    byKey = new Map();
    turns.set(target.client, byKey);
  }
  const queue = byKey;
  const run = () => runFlowTransaction(target, work);
  const mine = (queue.get(turn) ?? Promise.resolve()).then(run, run);
  const settled = mine.then(
    () => undefined,
    () => undefined,
  );
  queue.set(turn, settled);
  void settled.then(() => {
    if (queue.get(turn) === settled) queue.delete(turn);
  });
  return mine;
}

/** The flow transactions of this process running, by client and turn: the promise the next one waits for. */
const turns = new WeakMap<MongoClient, Map<string, Promise<unknown>>>();

async function runFlowTransaction<T>(target: FlowTarget, work: (tx: InTransaction) => Promise<T>): Promise<T> {
  const deadline = Date.now() + PARENT_WAIT_LIMIT_MS;
  try {
    for (;;) {
      try {
        return await runTransaction(target.client, target.writeConcern, target.limitMs, async (session, signal) => {
          const result = await work({ session, signal });
          if (session.inTransaction()) await commitWithin(session, target.writeConcern);
          return result;
        });
      } catch (error) {
        if (!(error instanceof ParentTaken) || Date.now() >= deadline) throw error;
        await waitForParent(target, error.parent);
      }
    }
  } catch (error) {
    if (!isTransactionUnsupportedError(error)) throw error;
    throw new WorkqError(
      'UNAVAILABLE',
      `Flows (jobs with children) need a MongoDB replica set (or sharded cluster) for their transactions; the server at ${target.hosts} is a standalone. Run mongod with --replSet (a one-member replica set is enough).`,
      { retryable: false, cause: error },
    );
  }
}

/** How long a child's end keeps waiting for other children's ends to release their parent. */
const PARENT_WAIT_LIMIT_MS = 120_000;

/**
 * A transaction's write of a parent met another transaction holding it (or having written it after this one's
 * snapshot): the children of one parent ending at once. Thrown in place of the `WriteConflict`, so that the
 * driver does not run the transaction again after its jittered pause (with many children ending, the ones
 * that keep losing would fall ever further behind): `inFlowTransaction` waits for the holder to end instead,
 * then runs it again at once.
 */
class ParentTaken extends Error {
  constructor(
    readonly parent: { _id: string; name: string },
    options: { cause: unknown },
  ) {
    super('the parent is held by another transaction', options);
  }
}

/**
 * Waits until no transaction holds `parent`: a write outside transactions waits for the holder to commit or
 * abort. It sets what a settling sets, `updatedAt`, at most to now (`$max`), and its write concern is 1: it
 * only waits.
 */
async function waitForParent(target: FlowTarget, parent: { _id: string; name: string }): Promise<void> {
  await withCallLimit(target.limitMs, (signal) => {
    const options: Abortable<UpdateOptions> = { writeConcern: { w: 1 }, signal };
    return target.jobs.updateOne(parent, { $max: { updatedAt: new Date() } }, options);
  });
}

/** `write`, its `WriteConflict` thrown as `ParentTaken`. */
function onParent<T>(parent: { _id: string; name: string }, write: Promise<T>): Promise<T> {
  return write.catch((error: unknown) => {
    throw isWriteConflict(error) ? new ParentTaken(parent, { cause: error }) : error;
  });
}

/** A child whose end settles its parent, with its parent's name, which writes to the parent name. */
export interface EndedChild extends SharedEndedChild {
  parentName: string;
}

/** The fields of a child a settling reads: project these from the documents passed to `endedChildren`. */
export const CHILD_FIELDS = { _id: 1, name: 1, parentId: 1, parentName: 1, onFailure: 1 } as const;

/** The children among `docs` (read with `CHILD_FIELDS`), as they ended. */
export function endedChildren(
  docs: readonly Pick<JobDocument, '_id' | 'name' | 'parentId' | 'parentName' | 'onFailure'>[],
  end: EndedChild['end'],
  error: (doc: Pick<JobDocument, '_id'>) => JobError | null = () => null,
): EndedChild[] {
  return docs.flatMap((doc) =>
    typeof doc.parentId === 'string' && typeof doc.parentName === 'string'
      ? [
          {
            id: doc._id,
            name: doc.name,
            parentId: doc.parentId,
            parentName: doc.parentName,
            onFailure: doc.onFailure ?? 'fail-parent',
            end,
            error: error(doc),
          },
        ]
      : [],
  );
}

/** The stored states of a job that has not finished. */
const UNFINISHED = ['delayed', 'waiting', 'waiting-children', 'active'] as const;

/**
 * What children's ends do to their parents (`FlowStore`, "A child's end"), in the transaction of the ends
 * themselves, after the children were written. Per parent, one write that only a `waiting-children` parent
 * matches: a child under `fail-parent` ended dead or cancelled makes it dead, its error naming the child, and
 * cancels its unfinished descendants (`cancelDescendants`); otherwise its `pendingChildren` goes down by the
 * children that ended (`$inc`), and a count at 0 makes it waiting (ready, or `delayed` while its run time is
 * ahead). Racing ends of one parent's children write its document in transactions of their own: one commits,
 * the others conflict and run again on what it left, so the count reaches 0 once. A parent that went dead and
 * is itself a child ends in turn. Resolves to the names of the parents made ready (waiting, due at `now`).
 */
export async function settleParents(
  jobs: Collection<JobDocument>,
  tx: InTransaction,
  ended: readonly EndedChild[],
  now: Date,
): Promise<string[]> {
  const ready: string[] = [];
  for (let round = ended; round.length > 0; ) round = await settleRound(jobs, tx, round, now, ready);
  return ready;
}

async function settleRound(
  jobs: Collection<JobDocument>,
  tx: InTransaction,
  ended: readonly EndedChild[],
  now: Date,
  ready: string[],
): Promise<EndedChild[]> {
  const next: EndedChild[] = [];
  const after: Abortable<FindOneAndUpdateOptions> = { ...tx, returnDocument: 'after' };
  for (const [parentId, children] of byParent(ended)) {
    const parked = { _id: parentId, name: (children[0] as EndedChild).parentName, state: 'waiting-children' as const };
    const failing = failingChild(children);
    if (failing) {
      const end = failing.end === 'dead' ? 'dead' : 'cancelled';
      const error = childFailedError({ id: failing.id, name: failing.name, error: failing.error }, end, 0, now);
      // The error's attempt is the parent's own.
      const recorded = { $mergeObjects: [literal(cleanError(error)), { attempt: '$attempts' }] };
      const failed = [
        { $set: { state: 'dead', error: recorded, errors: appendedErrors(recorded), finishedAt: now, updatedAt: now } },
      ];
      const doc = await onParent(parked, jobs.findOneAndUpdate(parked, failed, { ...after, projection: CHILD_FIELDS }));
      if (!doc) continue;
      await cancelDescendants(jobs, tx, [parentId], now);
      next.push(...endedChildren([doc], 'dead', () => error));
      continue;
    }
    const counted = { $inc: { pendingChildren: -children.length }, $set: { updatedAt: now } };
    const projection = { name: 1, pendingChildren: 1, runAt: 1 };
    const doc = await onParent(parked, jobs.findOneAndUpdate(parked, counted, { ...after, projection }));
    if (!doc || (doc.pendingChildren ?? 0) > 0) continue;
    const state = notStartedState(doc.runAt, now);
    const options: Abortable<UpdateOptions> = { ...tx };
    await jobs.updateOne(parked, { $set: { state, pendingChildren: 0 } }, options);
    if (state === 'waiting') ready.push(doc.name);
  }
  return next;
}

/**
 * Cancels the unfinished descendants of `parentIds`, level by level through the children index: each one
 * `cancelled` and finished, its lease ended (a worker holding it loses it), its error `flowCancelledError`
 * (naming its parent, with its own attempt) recorded and appended to `errors`. One write per parent and job
 * type, each naming the type. Completed and otherwise ended children stay as they are.
 */
export async function cancelDescendants(
  jobs: Collection<JobDocument>,
  tx: InTransaction,
  parentIds: readonly string[],
  now: Date,
): Promise<void> {
  for (let parents = [...parentIds]; parents.length > 0; ) {
    const found = await jobs
      .find(
        { parentId: { $in: parents, ...IN_CHILDREN_INDEX }, state: { $in: [...UNFINISHED] } },
        { projection: { _id: 1, name: 1, parentId: 1, childCount: 1 }, hint: CHILDREN_INDEX, ...tx },
      )
      .toArray();
    if (found.length === 0) return;
    const groups = new Map<string, { name: string; parentId: string; ids: string[] }>();
    for (const doc of found) {
      const key = JSON.stringify([doc.name, doc.parentId]);
      const group = groups.get(key) ?? { name: doc.name, parentId: String(doc.parentId), ids: [] };
      group.ids.push(doc._id);
      groups.set(key, group);
    }
    const writes = [...groups.values()].map(({ name, parentId, ids }): AnyBulkWriteOperation<JobDocument> => {
      const error = {
        $mergeObjects: [literal(cleanError(flowCancelledError(parentId, 0, now))), { attempt: '$attempts' }],
      };
      const cancelled = {
        ...ENDED_LEASE,
        state: 'cancelled',
        error,
        errors: appendedErrors(error),
        finishedAt: now,
        updatedAt: now,
      };
      return {
        updateMany: {
          filter: { _id: { $in: ids }, name, state: { $in: [...UNFINISHED] } },
          update: [{ $set: cancelled }],
        },
      };
    });
    const options: Abortable<BulkWriteOptions> = { ordered: false, ...tx };
    await jobs.bulkWrite(writes, options);
    parents = found.filter((doc) => (doc.childCount ?? 0) > 0).map((doc) => doc._id);
  }
}
