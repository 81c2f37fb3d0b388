import type { Collection, Filter, MongoClient, TransactionOptions, WriteConcernSettings } from 'mongodb';
import type { InsertOutcome, NewJob } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { type JobDocument, toJobDocument, toJobRecord } from './documents.ts';
import { isDuplicateKeyError, isTransactionUnsupportedError } from './errors.ts';
import { IDEMPOTENCY_INDEX } from './indexes.ts';
import { ENDED_LEASE } from './leases.ts';

/**
 * A transaction's options: majority, journaled, its commit bounded by
 * `maxCommitTimeMS` rather than `wtimeoutMS`, which `withTransaction` would
 * keep retrying for two minutes.
 */
function transactionOptions(writeConcern: WriteConcernSettings): TransactionOptions {
  const { wtimeoutMS, ...majority } = writeConcern;
  return {
    writeConcern: majority,
    readConcern: { level: 'majority' },
    readPreference: 'primary',
    ...(wtimeoutMS === undefined ? {} : { maxCommitTimeMS: wtimeoutMS }),
  };
}

/** Where `moveJob` runs its transaction. */
export interface MoveTarget {
  client: MongoClient;
  jobs: Collection<JobDocument>;
  /** The write concern of every write (see `durableWrites`). */
  writeConcern: WriteConcernSettings;
  /** Host list for error messages (never credentials). */
  hosts: string;
}

/**
 * `Store.moveJob` for the job `held` selects (see `heldBy`). One transaction: the next job's key holder
 * looked up (when it has a key), the held job completed into it or into `next`, and `next` inserted when no
 * job holds its key. A key taken by a concurrent insert after the look-up aborts it all: nothing changed,
 * and the engine tries again (`KeyHolderGone`).
 */
export async function moveJob(
  target: MoveTarget,
  held: Filter<JobDocument>,
  next: NewJob,
  now: Date,
): Promise<InsertOutcome | null> {
  const { client, jobs } = target;
  const session = client.startSession();
  try {
    return await session.withTransaction(async (): Promise<InsertOutcome | null> => {
      const holder =
        next.idempotencyKey === null
          ? null
          : await jobs.findOne(
              { name: next.name, idempotencyKey: { $eq: next.idempotencyKey, $type: 'string' } },
              { session, hint: IDEMPOTENCY_INDEX },
            );
      const { matchedCount } = await jobs.updateOne(
        held,
        {
          $set: {
            ...ENDED_LEASE,
            state: 'completed',
            movedTo: holder?._id ?? next.id,
            finishedAt: now,
            updatedAt: now,
          },
        },
        { session },
      );
      if (matchedCount === 0) return null;
      if (holder) return { job: toJobRecord(holder), created: false };
      const doc = toJobDocument(next);
      await jobs.insertOne(doc, { session });
      return { job: toJobRecord(doc), created: true };
    }, transactionOptions(target.writeConcern));
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
    throw error;
  } finally {
    await session.endSession();
  }
}
