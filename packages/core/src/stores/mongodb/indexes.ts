import type { Collection, Db, IndexDescription } from 'mongodb';
import { WorkqError } from '../../errors.ts';
import { isIndexOptionsConflict, isNamespaceNotFound, isWriteTimeout } from './errors.ts';

/** The collections of one store, by role. */
export interface CollectionNames {
  jobs: string;
  schemas: string;
  workers: string;
  wakeups: string;
  /** Leader election: a lease document per role (see leadership.ts). */
  leaders: string;
}

export function collectionNames(prefix: string): CollectionNames {
  return {
    jobs: `${prefix}jobs`,
    schemas: `${prefix}schemas`,
    workers: `${prefix}workers`,
    wakeups: `${prefix}wakeups`,
    leaders: `${prefix}leaders`,
  };
}

/** The name of the claim index, which claims name explicitly (it is partial, and no other index gives the claim order). */
export const CLAIM_INDEX = 'claim';

/** The name of the index through which a claim finds the delayed jobs of its name that came due. */
export const DELAYED_INDEX = 'delayed_due';

/** The name of the unique index of idempotency keys, through which a duplicate's holder is found. */
export const IDEMPOTENCY_INDEX = 'idempotency';

/** The name of the TTL index that expires finished jobs. */
export const HISTORY_TTL_INDEX = 'history_ttl';

/** How long an index build may wait (for its commit quorum too), and whether the server is a replica set member. */
export interface IndexBuild {
  timeoutMS: number;
  replicaSet: boolean;
}

/**
 * The indexes of the jobs collection. The claim index is partial on
 * `state: 'waiting'`: it holds live jobs only, so finished history never
 * lengthens a claim, and its key order is the claim sort.
 */
export function jobIndexes(historyRetentionMs: number): IndexDescription[] {
  return [
    {
      name: CLAIM_INDEX,
      key: { name: 1, priority: -1, orderKey: 1, _id: 1 },
      partialFilterExpression: { state: 'waiting' },
    },
    { name: DELAYED_INDEX, key: { name: 1, runAt: 1 }, partialFilterExpression: { state: 'delayed' } },
    {
      name: IDEMPOTENCY_INDEX,
      key: { name: 1, idempotencyKey: 1 },
      unique: true,
      partialFilterExpression: { idempotencyKey: { $type: 'string' } },
    },
    { name: 'lease_expiry', key: { leaseExpiresAt: 1 }, partialFilterExpression: { state: 'active' } },
    // Only finished jobs carry a `finishedAt` date, so only they expire.
    { name: HISTORY_TTL_INDEX, key: { finishedAt: 1 }, expireAfterSeconds: ttlSeconds(historyRetentionMs) },
    { name: 'list_by_name', key: { name: 1, state: 1, _id: 1 } },
    { name: 'list_by_state', key: { state: 1, _id: 1 } },
  ];
}

function ttlSeconds(historyRetentionMs: number): number {
  return Math.max(1, Math.ceil(historyRetentionMs / 1000));
}

/**
 * Creates every index the store relies on, after moving jobs an earlier version left waiting for later out
 * of the claim index; a changed history retention updates the TTL in place. Each build waits for a majority
 * of the replica set to commit it, at most `build.timeoutMS`.
 */
export async function ensureIndexes(
  db: Db,
  names: CollectionNames,
  historyRetentionMs: number,
  build: IndexBuild,
): Promise<void> {
  const jobs = db.collection(names.jobs);
  await moveLaterJobsOutOfClaimIndex(jobs);
  try {
    await createIndexes(jobs, jobIndexes(historyRetentionMs), build);
  } catch (error) {
    if (!isIndexOptionsConflict(error)) throw error;
    await db.command({
      collMod: names.jobs,
      index: { name: HISTORY_TTL_INDEX, expireAfterSeconds: ttlSeconds(historyRetentionMs) },
    });
    await createIndexes(jobs, jobIndexes(historyRetentionMs), build);
  }
  await createIndexes(
    db.collection(names.schemas),
    [{ name: 'name_version', key: { name: 1, version: 1 }, unique: true }],
    build,
  );
  await createIndexes(db.collection(names.workers), [{ name: 'seen_at', key: { seenAt: 1 } }], build);
}

/** Builds what is missing; the server leaves indexes that exist as specified alone. */
async function createIndexes(collection: Collection, wanted: IndexDescription[], build: IndexBuild): Promise<void> {
  try {
    // The default commit quorum is every voting member: one member down would hold the build forever.
    await collection.createIndexes(wanted, {
      maxTimeMS: build.timeoutMS,
      ...(build.replicaSet ? { commitQuorum: 'majority' } : {}),
    });
  } catch (error) {
    if (!isWriteTimeout(error)) throw error;
    throw new WorkqError(
      'TIMEOUT',
      `The indexes of ${collection.collectionName} were not built within indexBuildTimeoutMS (${build.timeoutMS} ms): a majority of the replica set must commit an index build. The build goes on in the server; check that a majority of the members is up, then start again.`,
      { retryable: true, cause: error },
    );
  }
}

/**
 * Versions before the delayed state stored a job due later as `waiting`, in the claim index, where every
 * claim of its name stepped over it. While `delayed_due` does not exist (the first open that creates it,
 * or again after a crash before it was created), such jobs move to `delayed`, by the server's clock.
 */
async function moveLaterJobsOutOfClaimIndex(jobs: Collection): Promise<void> {
  let indexNames: string[];
  try {
    indexNames = (await jobs.listIndexes().toArray()).map((index) => String(index.name));
  } catch (error) {
    if (isNamespaceNotFound(error)) return; // a new store: nothing was written before
    throw error;
  }
  if (indexNames.includes(DELAYED_INDEX)) return;
  await jobs.updateMany({ state: 'waiting', $expr: { $gt: ['$runAt', '$$NOW'] } }, { $set: { state: 'delayed' } });
}
