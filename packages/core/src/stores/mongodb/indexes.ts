import { isDeepStrictEqual } from 'node:util';
import type { Collection, Db, Document, IndexDescription } from 'mongodb';
import { WorkqError } from '../../errors.ts';
import { isIndexConflict, isIndexNotFound, isNamespaceNotFound, isWriteTimeout } from './errors.ts';

/** The collections of one store, by role. */
export interface CollectionNames {
  jobs: string;
  schemas: string;
  workers: string;
  wakeups: string;
  /** Leader election: a lease document per role (see leadership.ts). */
  leaders: string;
  /** Schedules kept in the store, and the last run of each schedule (see schedules.ts); keyed by `_id`. */
  schedules: string;
  scheduleRuns: string;
  /** Flow control: each job type's settings (keyed by name), and each group's last turn (see flow-control.ts). */
  queueSettings: string;
  queueGroups: string;
}

export function collectionNames(prefix: string): CollectionNames {
  return {
    jobs: `${prefix}jobs`,
    schemas: `${prefix}schemas`,
    workers: `${prefix}workers`,
    wakeups: `${prefix}wakeups`,
    leaders: `${prefix}leaders`,
    schedules: `${prefix}schedules`,
    scheduleRuns: `${prefix}schedule_runs`,
    queueSettings: `${prefix}queue_settings`,
    queueGroups: `${prefix}queue_groups`,
  };
}

/**
 * The name of the claim index, which claims name explicitly (it is partial, and no other index gives the
 * claim order). Earlier versions named a claim index without `version` `claim`; a changed index gets a new
 * name, so servers of both versions can run side by side during an upgrade.
 */
export const CLAIM_INDEX = 'claim_by_version';

/** The key of the claim index, for calls that name an index by its key (`findOneAndUpdate`). */
export const CLAIM_INDEX_KEY = { name: 1, version: 1, priority: -1, orderKey: 1, _id: 1 } as const;

/** The name of the index through which a claim finds the delayed jobs of its name that came due. */
export const DELAYED_INDEX = 'delayed_due';

/** The name of the index through which a limited claim finds a group's waiting jobs in claim order. */
export const GROUP_INDEX = 'group_claim';

/** The name of the unique index of idempotency keys, through which a duplicate's holder is found. */
export const IDEMPOTENCY_INDEX = 'idempotency';

/** The name of the unique index of debounce keys, through which a debounce finds the job holding its key. */
export const DEBOUNCE_INDEX = 'debounce';

/** The key of the debounce index, for calls that name an index by its key (`findOneAndUpdate`). */
export const DEBOUNCE_INDEX_KEY = { name: 1, debounceKey: 1 } as const;

/** The name of the TTL index that expires finished jobs. */
export const HISTORY_TTL_INDEX = 'history_ttl';

/** The longest history retention a TTL index takes: `expireAfterSeconds` is at most 2^31 - 1. */
export const MAX_HISTORY_RETENTION_MS = 2_147_483_647_000;

/** An index the store creates, by name. */
type IndexSpec = IndexDescription & { name: string };

/** How long an index build may wait (for its commit quorum too), and whether the server is a replica set member. */
export interface IndexBuild {
  timeoutMS: number;
  replicaSet: boolean;
}

/**
 * The indexes of the jobs collection. The claim index is partial on
 * `state: 'waiting'`: it holds live jobs only, so finished history never
 * lengthens a claim. Its keys are the job name, the version (a claim names
 * the versions it reads, so jobs of other versions are never scanned) and
 * then the claim sort, which the index gives within each version.
 */
export function jobIndexes(historyRetentionMs: number): IndexSpec[] {
  return [
    {
      name: CLAIM_INDEX,
      key: { ...CLAIM_INDEX_KEY },
      partialFilterExpression: { state: 'waiting' },
    },
    { name: DELAYED_INDEX, key: { name: 1, runAt: 1 }, partialFilterExpression: { state: 'delayed' } },
    // Only jobs with a group are in it: jobs without one cost no more to insert.
    {
      name: GROUP_INDEX,
      key: { name: 1, group: 1, priority: -1, orderKey: 1, _id: 1 },
      partialFilterExpression: { state: 'waiting', group: { $type: 'string' } },
    },
    {
      name: IDEMPOTENCY_INDEX,
      key: { name: 1, idempotencyKey: 1 },
      unique: true,
      partialFilterExpression: { idempotencyKey: { $type: 'string' } },
    },
    {
      name: DEBOUNCE_INDEX,
      key: { ...DEBOUNCE_INDEX_KEY },
      unique: true,
      partialFilterExpression: { debounceKey: { $type: 'string' } },
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
 * Creates every index the store relies on, after moving jobs an earlier
 * version left waiting for later out of the claim index. Where the server
 * refuses one because another stands in its way (codes 85 and 86), that
 * index is made to match: a changed TTL in place, anything else dropped and
 * rebuilt. Each build waits for a majority of the replica set to commit it,
 * at most `build.timeoutMS`.
 */
export async function ensureIndexes(
  db: Db,
  names: CollectionNames,
  historyRetentionMs: number,
  build: IndexBuild,
): Promise<void> {
  await moveLaterJobsOutOfClaimIndex(db.collection(names.jobs));
  await ensureCollectionIndexes(db, names.jobs, jobIndexes(historyRetentionMs), build);
  await ensureCollectionIndexes(
    db,
    names.schemas,
    [{ name: 'name_version', key: { name: 1, version: 1 }, unique: true }],
    build,
  );
  await ensureCollectionIndexes(db, names.workers, [{ name: 'seen_at', key: { seenAt: 1 } }], build);
}

async function ensureCollectionIndexes(db: Db, name: string, wanted: IndexSpec[], build: IndexBuild): Promise<void> {
  const collection = db.collection(name);
  try {
    await createIndexes(collection, wanted, build);
  } catch (error) {
    if (!isIndexConflict(error)) throw error;
    await clearTheWay(db, collection, wanted);
    await createIndexes(collection, wanted, build);
  }
}

/** Builds what is missing; the server leaves indexes that exist as specified alone. */
async function createIndexes(collection: Collection, wanted: IndexSpec[], build: IndexBuild): Promise<void> {
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
 * Makes each index that stands in the way of a wanted one match it: under
 * its name with another TTL, changed in place (`collMod`); under its name
 * otherwise different, or with its key and partial filter under another
 * name, dropped (so it is rebuilt as wanted).
 */
async function clearTheWay(db: Db, collection: Collection, wanted: IndexSpec[]): Promise<void> {
  const existing = await collection.listIndexes().toArray();
  for (const spec of wanted) {
    const current = existing.find((index) => index.name === spec.name);
    if (current && !sameIndex(current, spec)) {
      if (sameIndex({ ...current, expireAfterSeconds: spec.expireAfterSeconds }, spec)) {
        await db.command({
          collMod: collection.collectionName,
          index: { name: spec.name, expireAfterSeconds: spec.expireAfterSeconds },
        });
      } else {
        await dropIndex(collection, spec.name);
      }
    }
    for (const twin of existing.filter((index) => index.name !== spec.name && sameDefinition(index, spec))) {
      await dropIndex(collection, String(twin.name));
    }
  }
}

/** Drops an index; one another server dropped first is gone all the same. */
async function dropIndex(collection: Collection, name: string): Promise<void> {
  try {
    await collection.dropIndex(name);
  } catch (error) {
    if (!isIndexNotFound(error)) throw error;
  }
}

/** What the server identifies an index by: its key, in order, and its partial filter. */
function sameDefinition(index: Document, spec: IndexSpec): boolean {
  return (
    isDeepStrictEqual(Object.entries(index.key ?? {}), Object.entries(spec.key)) &&
    isDeepStrictEqual(index.partialFilterExpression, spec.partialFilterExpression)
  );
}

/** Whether an existing index is the wanted one: its definition and the options the store sets. */
function sameIndex(index: Document, spec: IndexSpec): boolean {
  return (
    sameDefinition(index, spec) &&
    Boolean(index.unique) === Boolean(spec.unique) &&
    Boolean(index.sparse) === Boolean(spec.sparse) &&
    index.expireAfterSeconds === spec.expireAfterSeconds &&
    index.collation === undefined
  );
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
