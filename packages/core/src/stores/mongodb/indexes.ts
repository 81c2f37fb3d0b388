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

/**
 * The name of the index through which a limited claim finds a group's waiting jobs in claim order. Its key
 * has `version` after the group, as the claim index has after the name, so a claim reads only the versions
 * it takes; earlier versions named one without it `group_claim`.
 */
export const GROUP_INDEX = 'group_claim_by_version';

/**
 * The names of the indexes through which a claim under strict group order finds the grouped jobs that have
 * started and wait to run again (an attempt spent), one per state: only those jobs are in them.
 */
export const HELD_INDEXES = { waiting: 'held_waiting', delayed: 'held_delayed' } as const;

/** The partial filter of a held-jobs index, which a query repeats to use it. */
export function heldFilter(state: 'waiting' | 'delayed') {
  return { state, attempts: { $gt: 0 }, group: { $type: 'string' } } as const;
}

/** The name of the unique index of idempotency keys, through which a duplicate's holder is found. */
export const IDEMPOTENCY_INDEX = 'idempotency';

/** The name of the unique index of debounce keys, through which a debounce finds the job holding its key. */
export const DEBOUNCE_INDEX = 'debounce';

/** The key of the debounce index, for calls that name an index by its key (`findOneAndUpdate`). */
export const DEBOUNCE_INDEX_KEY = { name: 1, debounceKey: 1 } as const;

/**
 * The name of the index through which a job list filtered by group reads the group's jobs, one run per state
 * (list-jobs.ts). Only jobs with a group are in it.
 */
export const GROUP_LIST_INDEX = 'list_by_group';

/**
 * The name of the index through which a parent's children are read, in enqueue order (by id): listed,
 * cancelled and revived with their parent. Only children are in it: a job without a parent costs no more.
 */
export const CHILDREN_INDEX = 'children';

/** The index's partial filter, which a query repeats (`parentId: { …, $type: 'string' }`) to use it. */
export const IN_CHILDREN_INDEX = { $type: 'string' } as const;

/** The name of the index that holds exactly the parents waiting for their children, through which they are counted. */
export const PARENTS_WAITING_INDEX = 'parents_waiting';

/** The name of the index through which the lease sweep finds expired leases, oldest deadline first. */
export const LEASE_INDEX = 'lease_expiry';

/** The name of the index of `queue_groups` by job type and turn, newest first, which bounds that collection. */
export const GROUP_TURNS_INDEX = 'turns_by_name';

/**
 * The ends a job may have a retention of its own for, each with its field and the index of the jobs with one
 * (a number, or `null` where it names only the other end) that ended there, by that field then `finishedAt`:
 * the pruner reads each retention's range of jobs past it, so only the jobs due, and finds the distinct
 * retentions along it, one key each; it reads the jobs whose retention is `null` there at `historyRetentionMs`.
 */
export const OWN_RETENTION_INDEXES = [
  { name: 'own_retention_completed', state: 'completed', field: 'retainCompletedMs' },
  { name: 'own_retention_dead', state: 'dead', field: 'retainDeadMs' },
] as const;

/**
 * The name of the index of the cancelled jobs with a retention of their own, by `finishedAt`: no retention names
 * cancellation, so the pruner reads those past `historyRetentionMs` through it.
 */
export const OWN_RETENTION_CANCELLED_INDEX = 'own_retention_cancelled';

/**
 * The name of the TTL index that expires finished jobs without a retention of their own at
 * `historyRetentionMs`: partial on the marker only those jobs carry (`JobDocument.ttl`). Earlier versions
 * expired every finished job through `history_ttl` (see `RETIRED_INDEXES`), which capped a job's own
 * retention at `historyRetentionMs` until it is dropped.
 */
export const HISTORY_TTL_INDEX = 'shared_history_ttl';

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
 * lengthens a claim, nor do parents waiting for their children. Its keys are the job name, the version (a claim names
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
      key: { name: 1, group: 1, version: 1, priority: -1, orderKey: 1, _id: 1 },
      partialFilterExpression: { state: 'waiting', group: { $type: 'string' } },
    },
    // Only grouped jobs back in the queue after an attempt are in them: a first attempt costs nothing more.
    { name: HELD_INDEXES.waiting, key: { name: 1, group: 1 }, partialFilterExpression: heldFilter('waiting') },
    { name: HELD_INDEXES.delayed, key: { name: 1, group: 1 }, partialFilterExpression: heldFilter('delayed') },
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
    { name: LEASE_INDEX, key: { leaseExpiresAt: 1 }, partialFilterExpression: { state: 'active' } },
    // Only finished jobs without a retention of their own are in it: a longer one is kept (the pruner deletes
    // those jobs), and a job costs it no entry until it finishes.
    {
      name: HISTORY_TTL_INDEX,
      key: { finishedAt: 1 },
      expireAfterSeconds: ttlSeconds(historyRetentionMs),
      partialFilterExpression: { ttl: true, finishedAt: { $type: 'date' } },
    },
    // Only finished jobs with a retention of their own are in them (both fields are present on those, one maybe
    // `null`): the pruner's look-ups of those past it, or past `historyRetentionMs` where it names another end.
    ...OWN_RETENTION_INDEXES.map(({ name, state, field }) => ({
      name,
      key: { [field]: 1, finishedAt: 1 },
      partialFilterExpression: { state, [field]: { $exists: true } },
    })),
    {
      name: OWN_RETENTION_CANCELLED_INDEX,
      key: { finishedAt: 1 },
      partialFilterExpression: { state: 'cancelled', retainCompletedMs: { $exists: true } },
    },
    { name: 'list_by_name', key: { name: 1, state: 1, _id: 1 } },
    { name: 'list_by_state', key: { state: 1, _id: 1 } },
    {
      name: GROUP_LIST_INDEX,
      key: { group: 1, state: 1, _id: 1 },
      partialFilterExpression: { group: { $type: 'string' } },
    },
    { name: PARENTS_WAITING_INDEX, key: { name: 1, _id: 1 }, partialFilterExpression: { state: 'waiting-children' } },
    {
      name: CHILDREN_INDEX,
      key: { parentId: 1, _id: 1 },
      partialFilterExpression: { parentId: { $type: 'string' } },
    },
  ];
}

function ttlSeconds(historyRetentionMs: number): number {
  return Math.max(1, Math.ceil(historyRetentionMs / 1000));
}

/**
 * Creates every index the store relies on, after moving jobs an earlier
 * version left waiting for later out of the claim index. Indexes are only
 * ever added: a changed index gets a new name (see `CLAIM_INDEX`), so
 * servers of the old and the new version run side by side during a rollout,
 * each hinting the indexes it knows, and an index an earlier version made
 * stays until `dropRetiredIndexes` is run. Where the server refuses one
 * because another stands in its way (codes 85 and 86), a changed TTL is
 * changed in place (`collMod`); anything else fails the start, naming the
 * index: dropping and rebuilding it while other servers run would fail
 * their hinted queries, and a unique index dropped admits duplicates. Each
 * build waits for a majority of the replica set (or of each shard) to commit
 * it, at most `build.timeoutMS`.
 */
export async function ensureIndexes(
  db: Db,
  names: CollectionNames,
  historyRetentionMs: number,
  build: IndexBuild,
): Promise<void> {
  await moveLaterJobsOutOfClaimIndex(db.collection(names.jobs));
  const quorum = { ...build, replicaSet: build.replicaSet || (await isMongos(db)) };
  await ensureCollectionIndexes(db, names.jobs, jobIndexes(historyRetentionMs), quorum);
  await ensureCollectionIndexes(
    db,
    names.schemas,
    [{ name: 'name_version', key: { name: 1, version: 1 }, unique: true }],
    quorum,
  );
  await ensureCollectionIndexes(db, names.workers, [{ name: 'seen_at', key: { seenAt: 1 } }], quorum);
  await ensureCollectionIndexes(
    db,
    names.queueGroups,
    [{ name: GROUP_TURNS_INDEX, key: { name: 1, lastTurn: -1 } }],
    quorum,
  );
}

/**
 * Whether the server is a mongos (`hello.msg` is `'isdbgrid'`): it builds
 * an index on each shard's replica set, so a build takes a commit quorum
 * there as on a replica set member.
 */
async function isMongos(db: Db): Promise<boolean> {
  const hello = await db.command({ hello: 1 });
  return hello.msg === 'isdbgrid';
}

async function ensureCollectionIndexes(db: Db, name: string, wanted: IndexSpec[], build: IndexBuild): Promise<void> {
  const collection = db.collection(name);
  try {
    await createIndexes(db, collection, wanted, build);
  } catch (error) {
    if (!isIndexConflict(error)) throw error;
    await changeTtlsInPlace(db, collection, wanted, build);
    await createIndexes(db, collection, wanted, build);
  }
}

/**
 * Builds what is missing; the server leaves indexes that exist as specified
 * alone. Sent as a command, since the driver's `createIndexes` drops
 * `maxTimeMS`; `db.command` inherits no write concern, so the build carries
 * the majority, journaled one, bounded by the build timeout as well.
 */
async function createIndexes(db: Db, collection: Collection, wanted: IndexSpec[], build: IndexBuild): Promise<void> {
  try {
    await db.command({
      createIndexes: collection.collectionName,
      indexes: wanted,
      maxTimeMS: build.timeoutMS,
      // The default commit quorum is every voting member: one member down would hold the build forever.
      ...(build.replicaSet ? { commitQuorum: 'majority' } : {}),
      writeConcern: { w: 'majority', j: true, wtimeout: build.timeoutMS },
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
 * Changes in place (`collMod`) each index under a wanted name that differs
 * from it only in its TTL. `db.command` inherits no write concern, so the
 * change carries the majority, journaled one of every write, bounded by the
 * build timeout. Any other index in a wanted one's way fails with
 * `UNAVAILABLE`, naming it and what to do.
 */
async function changeTtlsInPlace(db: Db, collection: Collection, wanted: IndexSpec[], build: IndexBuild) {
  const existing = await collection.listIndexes().toArray();
  for (const spec of wanted) {
    const current = existing.find((index) => index.name === spec.name);
    if (current && !sameIndex(current, spec)) {
      if (!sameIndex({ ...current, expireAfterSeconds: spec.expireAfterSeconds }, spec)) {
        throw indexInTheWay(collection, spec.name, `the index ${spec.name} exists with another definition`);
      }
      await db.command({
        collMod: collection.collectionName,
        index: { name: spec.name, expireAfterSeconds: spec.expireAfterSeconds },
        writeConcern: { w: 'majority', j: true, wtimeout: build.timeoutMS },
      });
    }
    const twin = existing.find((index) => index.name !== spec.name && sameDefinition(index, spec));
    if (!current && twin) {
      throw indexInTheWay(collection, String(twin.name), `the index ${twin.name} has the definition of ${spec.name}`);
    }
  }
}

function indexInTheWay(collection: Collection, name: string, what: string): WorkqError {
  const collectionName = collection.collectionName;
  return new WorkqError(
    'UNAVAILABLE',
    `Cannot create the indexes of ${collectionName}: ${what}, which this version does not change while other servers may be using it. Once no server uses it, drop it (db.${collectionName}.dropIndex('${name}')) and start again.`,
    { retryable: false },
  );
}

/**
 * Indexes earlier versions created and this one no longer uses, by
 * collection role. Servers of those versions still hint them during a
 * rollout, so only `dropRetiredIndexes` removes them.
 */
export const RETIRED_INDEXES: Partial<Record<keyof CollectionNames, readonly string[]>> = {
  // `history_ttl` expired every finished job, a job's own retention or not. `own_retention` held every job with
  // one by `finishedAt`, so the pruner read all those finished, due or not (`OWN_RETENTION_INDEXES` replace it).
  jobs: ['claim', 'group_claim', 'history_ttl', 'own_retention'],
};

/**
 * What must be done before a retired index is dropped, by its name. `history_ttl` expired the jobs earlier
 * versions wrote, which carry no marker (`JobDocument.ttl`): those without a retention of their own are marked
 * first, so `HISTORY_TTL_INDEX` and the pruner take them over (one pass over the collection, once).
 */
const BEFORE_DROP: Readonly<Record<string, (collection: Collection) => Promise<unknown>>> = {
  history_ttl: (jobs) =>
    jobs.updateMany({ ttl: { $exists: false }, retainCompletedMs: { $exists: false } }, { $set: { ttl: true } }),
};

/** Drops the indexes of `RETIRED_INDEXES` not dropped yet; see `dropRetiredMongoIndexes`. */
async function dropRetiredIndexes(db: Db, names: CollectionNames): Promise<string[]> {
  const dropped: string[] = [];
  for (const [role, retired] of Object.entries(RETIRED_INDEXES) as [keyof CollectionNames, readonly string[]][]) {
    const collection = db.collection(names[role]);
    const present = (await indexNamesOf(collection)) ?? [];
    for (const name of retired.filter((retiredName) => present.includes(retiredName))) {
      await BEFORE_DROP[name]?.(collection);
      try {
        await collection.dropIndex(name);
        dropped.push(`${collection.collectionName}.${name}`);
      } catch (error) {
        if (!isIndexNotFound(error) && !isNamespaceNotFound(error)) throw error;
      }
    }
  }
  return dropped;
}

/** The names of a collection's indexes; `null` for a collection that does not exist. */
async function indexNamesOf(collection: Collection): Promise<string[] | null> {
  try {
    return (await collection.listIndexes().toArray()).map((index) => String(index.name));
  } catch (error) {
    if (isNamespaceNotFound(error)) return null;
    throw error;
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
  const indexNames = await indexNamesOf(jobs);
  // A new store (no collection): nothing was written before.
  if (indexNames === null || indexNames.includes(DELAYED_INDEX)) return;
  await jobs.updateMany({ state: 'waiting', $expr: { $gt: ['$runAt', '$$NOW'] } }, { $set: { state: 'delayed' } });
}

/**
 * The admin step of an index rollout, `@workq/core/mongodb`'s one
 * maintenance call: once every server runs this version, drops the indexes
 * earlier versions made that it no longer uses (see `RETIRED_INDEXES`) from
 * the store's collections in `db` (the store's database), under
 * `collectionPrefix` (the store's, `'workq_'` by default), each after what
 * must be done first (`BEFORE_DROP`: before `history_ttl`, the jobs earlier
 * versions wrote are marked for the history TTL index). Resolves to the
 * `collection.index` names it dropped; running it again drops nothing.
 */
export function dropRetiredMongoIndexes(db: Db, collectionPrefix = 'workq_'): Promise<string[]> {
  return dropRetiredIndexes(db, collectionNames(collectionPrefix));
}
