import { type Document, Long, ObjectId } from 'bson';
import { type CommandContext, type CommandHandler, collectionOf } from './context.ts';
import type { IndexSpec } from './data.ts';
import { wireError } from './errors.ts';
import { MAX_BSON_OBJECT_SIZE } from './primary.ts';

/** The message size the server accepts, as `hello` announces it. */
export const MAX_MESSAGE_SIZE_BYTES = 48_000_000;
const MAX_WRITE_BATCH_SIZE = 100_000;

/** Wire versions: 21 is MongoDB 7.0, 25 is 8.0. */
export const WIRE_VERSIONS = { '7.0': 21, '8.0': 25 } as const;

let connectionIds = 0;

/** `hello` (and the legacy `isMaster`): a one-member replica set's primary, or a mongos. */
export function helloReply(
  context: Pick<CommandContext, 'primary' | 'replicaSet' | 'standalone' | 'address'>,
  maxWireVersion: number,
  legacy: boolean,
): Document {
  const { primary, address } = context;
  const writable = primary.writablePrimary;
  const common: Document = {
    ...(legacy ? { ismaster: writable } : { isWritablePrimary: writable }),
    helloOk: true,
    topologyVersion: { processId: primary.processId, counter: Long.fromNumber(primary.topologyCounter) },
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
    maxMessageSizeBytes: MAX_MESSAGE_SIZE_BYTES,
    maxWriteBatchSize: MAX_WRITE_BATCH_SIZE,
    localTime: new Date(primary.now().getTime() + primary.localTimeErrorMs),
    logicalSessionTimeoutMinutes: 30,
    connectionId: ++connectionIds,
    minWireVersion: 0,
    maxWireVersion,
    readOnly: false,
  };
  if (context.standalone) return common;
  if (!context.replicaSet) return { ...common, msg: 'isdbgrid' };
  const electionId = new ObjectId(`7fffffff${primary.electionTerm.toString(16).padStart(16, '0')}`);
  return {
    ...common,
    setName: 'rs0',
    setVersion: 1,
    hosts: [address],
    me: address,
    secondary: !writable,
    ...(writable ? { primary: address, electionId } : {}),
    lastWrite: {
      opTime: { ts: primary.operationTime, t: Long.fromNumber(primary.electionTerm) },
      lastWriteDate: new Date(),
      majorityOpTime: { ts: primary.operationTime, t: Long.fromNumber(primary.electionTerm) },
      majorityWriteDate: new Date(),
    },
  };
}

const create: CommandHandler = (context) => {
  const name = collectionOf(context);
  if (context.primary.collection(context.db, name)) {
    throw wireError(48, `Collection ${context.db}.${name} already exists.`);
  }
  const { create: _name, writeConcern: _wc, lsid: _lsid, $db: _db, $clusterTime: _ct, ...options } = context.body;
  if (options.capped === true && !(Number(options.size) > 0))
    throw wireError(72, 'the size field is required when creating a capped collection');
  context.primary.ensureCollection(context.db, name, options);
  return {};
};

const drop: CommandHandler = (context) => {
  const name = collectionOf(context);
  const collections = context.primary.databases.get(context.db);
  const data = collections?.get(name);
  if (!data) return {};
  collections?.delete(name);
  context.cursors.killNamespace(`${context.db}.${name}`);
  context.primary.append({ db: context.db, coll: name, operationType: 'drop' });
  return { nIndexesWas: data.indexes.size + 1, ns: `${context.db}.${name}` };
};

const dropDatabase: CommandHandler = (context) => {
  const collections = context.primary.databases.get(context.db);
  if (!collections) return {};
  for (const name of collections.keys()) {
    context.cursors.killNamespace(`${context.db}.${name}`);
    context.primary.append({ db: context.db, coll: name, operationType: 'drop' });
  }
  context.primary.databases.delete(context.db);
  context.primary.append({ db: context.db, coll: '', operationType: 'dropDatabase' });
  return { dropped: context.db };
};

const listCollections: CommandHandler = (context) => {
  const collections = context.primary.databases.get(context.db) ?? new Map();
  const filterName = (context.body.filter as { name?: unknown } | undefined)?.name;
  const docs = [...collections.entries()]
    .filter(([name]) => filterName === undefined || name === filterName)
    .map(([name, data]) => ({
      name,
      type: 'collection',
      options: data.options,
      info: { readOnly: false },
      idIndex: { v: 2, key: { _id: 1 }, name: '_id_' },
    }));
  return { cursor: { id: Long.fromNumber(0), ns: `${context.db}.$cmd.listCollections`, firstBatch: docs } };
};

/**
 * Builds the indexes not built yet; any conflict refuses the whole command
 * (85, 86, 67, or 11000 when existing documents break a unique index). A
 * `commitQuorum` is for replica sets only. While the majority is
 * unavailable a build waits on its commit quorum: until `maxTimeMS` (then
 * MaxTimeMSExpired, 50), or until the client goes.
 */
const createIndexes: CommandHandler = async (context) => {
  const { body, primary } = context;
  const coll = collectionOf(context);
  if (body.commitQuorum !== undefined && context.standalone) {
    throw wireError(2, "Standalones can't specify commitQuorum");
  }
  const existed = primary.collection(context.db, coll) !== undefined;
  const data = primary.ensureCollection(context.db, coll);
  const before = data.indexes.size + 1;
  const specs = (body.indexes ?? []) as IndexSpec[];
  for (const spec of specs) {
    if (typeof spec.name !== 'string' || spec.key === undefined)
      throw wireError(9, "Error in specification: the 'key' and 'name' fields are required");
  }
  const fresh = specs.filter((spec) => !data.checkIndex(spec));
  for (const spec of fresh) data.createIndex(spec);
  const answer = {
    numIndexesBefore: before,
    numIndexesAfter: data.indexes.size + 1,
    createdCollectionAutomatically: !existed,
    ...(fresh.length === 0 ? { note: 'all indexes already exist' } : {}),
    ...(context.replicaSet ? { commitQuorum: body.commitQuorum ?? 'votingMembers' } : {}),
  };
  if (fresh.length === 0 || primary.majorityAvailable) return answer;
  const maxTimeMS = Number(body.maxTimeMS ?? 0);
  const timedOut = maxTimeMS > 0 ? new Promise((resolve) => setTimeout(resolve, maxTimeMS)) : new Promise(() => {});
  await Promise.race([timedOut, context.abandoned]);
  throw wireError(50, 'operation exceeded time limit');
};

const listIndexes: CommandHandler = (context) => {
  const coll = collectionOf(context);
  const data = context.primary.collection(context.db, coll);
  if (!data) throw wireError(26, `ns does not exist: ${context.db}.${coll}`);
  const docs = [
    { v: 2, key: { _id: 1 }, name: '_id_' },
    ...[...data.indexes.values()].map((spec) => ({ v: 2, ...spec })),
  ];
  return { cursor: { id: Long.fromNumber(0), ns: `${context.db}.${coll}`, firstBatch: docs } };
};

const dropIndexes: CommandHandler = (context) => {
  const coll = collectionOf(context);
  const data = context.primary.collection(context.db, coll);
  if (!data) throw wireError(26, `ns not found ${context.db}.${coll}`);
  const was = data.indexes.size + 1;
  const index = context.body.index;
  const names =
    index === '*'
      ? [...data.indexes.keys()]
      : typeof index === 'string'
        ? [index]
        : [...data.indexes.values()]
            .filter((spec) => JSON.stringify(spec.key) === JSON.stringify(index))
            .map((spec) => spec.name);
  if (names.length === 0) throw wireError(27, `can't find index with key: ${JSON.stringify(index)}`);
  for (const name of names) {
    if (name === '_id_') throw wireError(72, 'cannot drop _id index');
    if (!data.indexes.has(name)) throw wireError(27, `index not found with name [${name}]`);
    data.dropIndex(name);
  }
  return { nIndexesWas: was };
};

const collMod: CommandHandler = (context) => {
  const coll = collectionOf(context);
  const data = context.primary.collection(context.db, coll);
  if (!data) throw wireError(26, `ns does not exist: ${context.db}.${coll}`);
  const index = context.body.index as { name?: string; expireAfterSeconds?: number } | undefined;
  if (!index?.name) return {};
  const spec = data.indexes.get(index.name);
  if (!spec) throw wireError(27, `cannot find index ${index.name} for ns ${context.db}.${coll}`);
  const old = spec.expireAfterSeconds;
  if (index.expireAfterSeconds !== undefined) data.modifyIndex(index.name, Number(index.expireAfterSeconds));
  return { expireAfterSeconds_old: old, expireAfterSeconds_new: index.expireAfterSeconds };
};

/** `commitTransaction`: the transaction's changes enter the oplog; a retry of a committed one succeeds again. */
const commitTransaction: CommandHandler = (context) => {
  const transaction = context.transaction;
  if (!transaction || transaction.state === 'aborted') {
    throw wireError(251, `Transaction with { txnNumber: ${context.body.txnNumber} } has been aborted.`);
  }
  transaction.commit();
  return {};
};

const abortTransaction: CommandHandler = (context) => {
  const transaction = context.transaction;
  if (transaction?.state !== 'inProgress') {
    throw wireError(251, `Transaction with { txnNumber: ${context.body.txnNumber} } has been aborted.`);
  }
  transaction.abort();
  return {};
};

const endSessions: CommandHandler = (context) => {
  context.sessions.end((context.body.endSessions ?? []) as Document[]);
  return {};
};

export const adminCommands: Record<string, CommandHandler> = {
  ping: () => ({}),
  buildInfo: () => ({
    version: '8.0.4',
    versionArray: [8, 0, 4, 0],
    bits: 64,
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
  }),
  endSessions,
  create,
  drop,
  dropDatabase,
  listCollections,
  createIndexes,
  listIndexes,
  dropIndexes,
  collMod,
  commitTransaction,
  abortTransaction,
};
