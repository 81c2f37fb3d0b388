import type {
  Collection,
  Filter,
  FindOneAndUpdateOptions,
  MongoClient,
  UpdateOptions,
  WriteConcernSettings,
} from 'mongodb';
import type { InsertOutcome, NewJob } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { NOT_A_CHILD } from './end-children.ts';
import { isDuplicateKeyError, isTransactionUnsupportedError } from './errors.ts';
import { IDEMPOTENCY_INDEX } from './indexes.ts';
import { ENDED_LEASE } from './leases.ts';
import { type JobDocument, toJobDocument, toJobRecord } from './records.ts';
import { CHILD_FIELDS, endedChildren, settleParents } from './settle-parents.ts';
import { commitWithin, isUnknownCommit, runTransaction } from './transactions.ts';

/** Where `moveJob` runs its transaction. */
export interface MoveTarget {
  client: MongoClient;
  jobs: Collection<JobDocument>;
  /** The write concern of every write (see `durableWrites`). */
  writeConcern: WriteConcernSettings;
  /** Host list for error messages (never credentials). */
  hosts: string;
  /** How long the transaction, and each read after it, may take before it is abandoned (see `runTransaction`). */
  limitMs: number;
}

/**
 * `Store.moveJob` for the job `held` selects (see `heldBy`). One transaction: the next job's key holder
 * looked up (when it has a key), the held job completed into it or into `next`, and `next` inserted when no
 * job holds its key, and a held child's parent settled (the names of the parents made ready go to `ready`).
 * A key taken by a concurrent insert after the look-up aborts it all: nothing changed,
 * and the engine tries again (`KeyHolderGone`). A commit whose answer is lost is sent again for at most
 * `writeTimeoutMS` (`commitWithin`), then its outcome is read from the majority-committed state.
 */
export async function moveJob(
  target: MoveTarget,
  held: Filter<JobDocument>,
  next: NewJob,
  now: Date,
  ready: string[] = [],
): Promise<InsertOutcome | null> {
  const { client, jobs } = target;
  // The names of the parents made ready, by the try that committed (the driver may run the transaction again).
  let readied: string[] = [];
  try {
    const result = await runTransaction(client, target.writeConcern, target.limitMs, async (session, signal) => {
      readied = [];
      const holder =
        next.idempotencyKey === null
          ? null
          : await jobs.findOne(
              { name: next.name, idempotencyKey: { $eq: next.idempotencyKey, $type: 'string' } },
              { session, hint: IDEMPOTENCY_INDEX, signal },
            );
      const inTransaction: Abortable<UpdateOptions> = { session, signal };
      const completed = {
        $set: {
          ...ENDED_LEASE,
          state: 'completed' as const,
          movedTo: holder?._id ?? next.id,
          finishedAt: now,
          updatedAt: now,
        },
      };
      // A job without a parent completes in one write; a child is written and read, then settles its parent.
      const { matchedCount } = await jobs.updateOne({ ...held, ...NOT_A_CHILD }, completed, inTransaction);
      if (matchedCount === 0) {
        const returning: Abortable<FindOneAndUpdateOptions> = { session, signal, projection: CHILD_FIELDS };
        const child = await jobs.findOneAndUpdate({ ...held, parentId: { $type: 'string' } }, completed, returning);
        // The lease is lost: nothing was written, so nothing is committed.
        if (!child) {
          await session.abortTransaction();
          return null;
        }
        readied = await settleParents(jobs, { session, signal }, endedChildren([child], 'completed'), now);
      }
      let outcome: InsertOutcome;
      if (holder) outcome = { job: toJobRecord(holder), created: false };
      else {
        const doc = toJobDocument(next);
        await jobs.insertOne(doc, inTransaction);
        outcome = { job: toJobRecord(doc), created: true };
      }
      await commitWithin(session, target.writeConcern);
      return outcome;
    });
    ready.push(...readied);
    return result;
  } catch (error) {
    if (isTransactionUnsupportedError(error)) {
      throw new WorkqError(
        'UNAVAILABLE',
        `moveTo needs a MongoDB replica set (or sharded cluster) for its transaction; the server at ${target.hosts} is a standalone. Run mongod with --replSet (a one-member replica set is enough).`,
        { retryable: false, cause: error },
      );
    }
    // The key was taken after the look-up: the transaction rolled back.
    if (isDuplicateKeyError(error)) return { job: null, created: false };
    if (!isUnknownCommit(error)) throw error;
    const moved = await movedOutcome(jobs, held, next, target.limitMs);
    if (!moved) throw error;
    return moved;
  }
}

/**
 * The outcome of a move whose commit outcome was unknown, read from the
 * majority-committed state: the held job completed into `next`, or into the
 * job holding `next`'s key, means the move happened, and that job is the
 * answer. `null` when the move did not happen.
 */
async function movedOutcome(
  jobs: Collection<JobDocument>,
  held: Filter<JobDocument>,
  next: NewJob,
  limitMs: number,
): Promise<InsertOutcome | null> {
  const majority = (signal: AbortSignal) => ({
    readConcern: { level: 'majority' as const },
    readPreference: 'primary' as const,
    signal,
  });
  const job = await withCallLimit(limitMs, (signal) => jobs.findOne({ _id: held._id }, majority(signal)));
  if (job?.state !== 'completed' || typeof job.movedTo !== 'string') return null;
  const movedTo = job.movedTo;
  const target = await withCallLimit(limitMs, (signal) => jobs.findOne({ _id: movedTo }, majority(signal)));
  if (!target) return null;
  if (target._id === next.id) return { job: toJobRecord(target), created: true };
  const holdsKey = next.idempotencyKey !== null && target.idempotencyKey === next.idempotencyKey;
  return target.name === next.name && holdsKey ? { job: toJobRecord(target), created: false } : null;
}
