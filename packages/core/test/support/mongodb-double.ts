import { isDeepStrictEqual } from 'node:util';
import { Aggregator } from 'mingo';
import {
  type BulkWriteResult,
  MongoBulkWriteError,
  MongoServerError,
  type WriteConcernSettings,
  type WriteError,
} from 'mongodb';
import { DoubleChangeStream } from './mongodb-double-change-stream.ts';
import {
  CollectionData,
  cloneDoc,
  type Doc,
  type IndexSpec,
  projected,
  updatedDoc,
  upsertSeed,
  writeError,
} from './mongodb-double-data.ts';

/** One write the double received, with the write concern it would have run under. */
export interface RecordedWrite {
  collection: string;
  method: string;
  /** The effective write concern: the call's, else the collection's, else the database's; a transaction's own in one. */
  writeConcern: WriteConcernSettings | undefined;
  inTransaction: boolean;
}

export interface MongoDriverDoubleOptions {
  /** Answer `hello` as a member of this replica set (so change streams look available). @defaultValue none: a standalone */
  replicaSet?: string;
  /** Whether transactions run; `false` answers like a standalone server (code 20). @defaultValue true */
  transactions?: boolean;
}

interface CallOptions {
  session?: DoubleSession;
  writeConcern?: WriteConcernSettings;
  sort?: Record<string, 1 | -1>;
  limit?: number;
  projection?: Record<string, 0 | 1>;
  returnDocument?: 'before' | 'after';
  upsert?: boolean;
  ordered?: boolean;
  hint?: string;
}

type Handle = { writeConcern?: WriteConcernSettings };

/**
 * A test double of the MongoDB driver calls the MongoDB store makes, on
 * `mingo` (MongoDB's query, sort, update and aggregation semantics in JS).
 * Not a database: no TTL expiry, change streams of inserts only, no isolation between a
 * transaction and other calls (a failed transaction is rolled back).
 */
export class MongoDriverDouble {
  /** Every write received, in order. */
  readonly writes: RecordedWrite[] = [];
  /** The options of every transaction started. */
  readonly transactions: Record<string, unknown>[] = [];
  readonly client: DoubleClient;
  readonly databases = new Map<string, Map<string, CollectionData>>();
  /** Open change streams (see `DoubleCollection.watch`). */
  readonly changeStreams = new Set<DoubleChangeStream>();

  constructor(readonly options: MongoDriverDoubleOptions = {}) {
    this.client = new DoubleClient(this);
  }

  /** The stored collection, or `undefined` when it does not exist. */
  collection(dbName: string, name: string): CollectionData | undefined {
    return this.databases.get(dbName)?.get(name);
  }

  /** The indexes of a collection, as created. */
  indexes(dbName: string, name: string): IndexSpec[] {
    return [...(this.collection(dbName, name)?.indexes.values() ?? [])];
  }

  data(dbName: string, name: string, create: boolean, options?: Record<string, unknown>): CollectionData | undefined {
    let db = this.databases.get(dbName);
    if (!db) {
      if (!create) return undefined;
      db = new Map();
      this.databases.set(dbName, db);
    }
    let data = db.get(name);
    if (!data && create) {
      data = new CollectionData(`${dbName}.${name}`, options);
      db.set(name, data);
    }
    return data;
  }
}

/** Creates the double; pass `double.client` (cast to `MongoClient`) to the store. */
export function createMongoDriverDouble(options?: MongoDriverDoubleOptions): MongoDriverDouble {
  return new MongoDriverDouble(options);
}

class DoubleClient {
  readonly options = { hosts: ['driver-double:27017'] };
  closed = false;

  constructor(private readonly double: MongoDriverDouble) {}

  db(name = 'test', options: Handle = {}): DoubleDb {
    return new DoubleDb(this.double, name, options);
  }

  startSession(): DoubleSession {
    return new DoubleSession(this.double);
  }

  async withSession<T>(executor: (session: DoubleSession) => Promise<T>): Promise<T> {
    const session = this.startSession();
    try {
      return await executor(session);
    } finally {
      await session.endSession();
    }
  }

  async connect(): Promise<this> {
    return this;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** A session whose transaction runs its callback once and rolls back the callback's writes if it throws. */
class DoubleSession {
  private undo: (() => void)[] | null = null;

  constructor(private readonly double: MongoDriverDouble) {}

  inTransaction(): boolean {
    return this.undo !== null;
  }

  /** Records how to undo one write made in this session's transaction. */
  recordUndo(step: () => void): void {
    this.undo?.push(step);
  }

  async withTransaction<T>(callback: (session: DoubleSession) => Promise<T>, options: Record<string, unknown> = {}) {
    if (this.double.options.transactions === false) {
      throw new MongoServerError({
        message: 'Transaction numbers are only allowed on a replica set member or mongos',
        code: 20,
        codeName: 'IllegalOperation',
      });
    }
    this.double.transactions.push(options);
    this.undo = [];
    try {
      const result = await callback(this);
      return result;
    } catch (error) {
      for (const step of this.undo.reverse()) step();
      throw error;
    } finally {
      this.undo = null;
    }
  }

  async endSession(): Promise<void> {}
}

class DoubleDb {
  constructor(
    private readonly double: MongoDriverDouble,
    readonly databaseName: string,
    readonly options: Handle,
  ) {}

  collection(name: string, options: Handle = {}): DoubleCollection {
    return new DoubleCollection(this.double, this, name, options);
  }

  async createCollection(name: string, options: Record<string, unknown> = {}): Promise<DoubleCollection> {
    if (this.double.collection(this.databaseName, name)) {
      throw new MongoServerError({ message: `Collection ${name} already exists.`, code: 48 });
    }
    this.double.data(this.databaseName, name, true, options);
    return this.collection(name);
  }

  async command(command: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (command.hello === 1) {
      const setName = this.double.options.replicaSet;
      return setName ? { isWritablePrimary: true, setName, ok: 1 } : { isWritablePrimary: true, ok: 1 };
    }
    if (typeof command.collMod === 'string') {
      const index = command.index as { name: string; expireAfterSeconds: number };
      this.double.data(this.databaseName, command.collMod, false)?.modifyIndex(index.name, index.expireAfterSeconds);
      return { ok: 1 };
    }
    throw new Error(`the driver double does not support the command ${Object.keys(command)[0]}`);
  }

  async dropDatabase(): Promise<boolean> {
    return this.double.databases.delete(this.databaseName);
  }
}

/** The driver's `Collection` methods the store calls, each atomic. */
class DoubleCollection {
  constructor(
    private readonly double: MongoDriverDouble,
    private readonly db: DoubleDb,
    readonly collectionName: string,
    private readonly options: Handle,
  ) {}

  async createIndexes(specs: IndexSpec[]): Promise<string[]> {
    const data = this.data();
    for (const spec of specs) data.createIndex(spec);
    return specs.map((spec) => spec.name);
  }

  /** The `_id` index and those created; the server's `NamespaceNotFound` when the collection does not exist. */
  listIndexes() {
    return {
      toArray: async (): Promise<IndexSpec[]> => {
        const data = this.double.collection(this.db.databaseName, this.collectionName);
        if (!data) {
          const message = `ns does not exist: ${this.db.databaseName}.${this.collectionName}`;
          throw new MongoServerError({ message, code: 26, codeName: 'NamespaceNotFound' });
        }
        const idIndex: IndexSpec = { name: '_id_', key: { _id: 1 } };
        return [idIndex, ...data.indexes.values()].map((spec) => structuredClone(spec));
      },
    };
  }

  async insertOne(doc: Doc, options: CallOptions = {}) {
    this.record('insertOne', options);
    const stored = this.data().insert(doc);
    this.undoable(options, stored._id, undefined);
    doc._id ??= stored._id;
    for (const stream of this.double.changeStreams) stream.announce(this.db.databaseName, this.collectionName, stored);
    return { acknowledged: true, insertedId: stored._id };
  }

  async insertMany(docs: Doc[], options: CallOptions = {}) {
    this.record('insertMany', options);
    const data = this.data();
    const writeErrors: WriteError[] = [];
    const insertedIds: Record<number, unknown> = {};
    for (const [index, doc] of docs.entries()) {
      try {
        const stored = data.insert(doc);
        this.undoable(options, stored._id, undefined);
        doc._id ??= stored._id;
        insertedIds[index] = stored._id;
      } catch (error) {
        if (!(error instanceof MongoServerError)) throw error;
        writeErrors.push(writeError(index, error, doc));
        if (options.ordered !== false) break;
      }
    }
    if (writeErrors.length > 0) {
      const insertedCount = Object.keys(insertedIds).length;
      const result = { insertedCount, insertedIds, matchedCount: 0, modifiedCount: 0, deletedCount: 0 };
      const first = writeErrors[0] as WriteError;
      throw new MongoBulkWriteError(
        { message: first.errmsg ?? 'write error', code: first.code, writeErrors },
        result as unknown as BulkWriteResult,
      );
    }
    return { acknowledged: true, insertedCount: docs.length, insertedIds };
  }

  /** Refuses a hint that names no index of the collection, as the server does. */
  private checkHint(options: CallOptions): void {
    if (options.hint !== undefined && !this.data().indexes.has(options.hint)) {
      throw new MongoServerError({ message: 'hint provided does not correspond to an existing index', code: 2 });
    }
  }

  find(filter: Doc = {}, options: CallOptions = {}) {
    this.checkHint(options);
    return {
      toArray: async () =>
        this.data()
          .match(filter, options.sort, options.limit)
          .map((doc) => projected(doc, options.projection)),
    };
  }

  async findOne(filter: Doc = {}, options: CallOptions = {}): Promise<Doc | null> {
    const [doc] = this.data().match(filter, options.sort, 1);
    return doc ? projected(doc, options.projection) : null;
  }

  async findOneAndUpdate(filter: Doc, update: Doc | Doc[], options: CallOptions = {}): Promise<Doc | null> {
    this.record('findOneAndUpdate', options);
    const result = this.updateFirst(filter, update, options);
    if (!result) return null;
    return cloneDoc(options.returnDocument === 'after' ? result.after : (result.before ?? result.after));
  }

  async updateOne(filter: Doc, update: Doc | Doc[], options: CallOptions = {}) {
    this.record('updateOne', options);
    const result = this.updateFirst(filter, update, options);
    const modified = result?.before !== undefined && !isDeepStrictEqual(result.before, result.after);
    return {
      acknowledged: true,
      matchedCount: result?.before ? 1 : 0,
      modifiedCount: modified ? 1 : 0,
      upsertedCount: result && !result.before ? 1 : 0,
      upsertedId: result && !result.before ? result.after._id : null,
    };
  }

  async updateMany(filter: Doc, update: Doc | Doc[], options: CallOptions = {}) {
    this.checkHint(options);
    this.record('updateMany', options);
    const data = this.data();
    let modifiedCount = 0;
    const matched = data.match(filter);
    for (const before of matched) {
      const after = updatedDoc(before, update, false);
      if (isDeepStrictEqual(before, after)) continue;
      data.replace(before, after);
      this.undoable(options, before._id, before);
      modifiedCount += 1;
    }
    return { acknowledged: true, matchedCount: matched.length, modifiedCount, upsertedCount: 0, upsertedId: null };
  }

  async deleteMany(filter: Doc, options: CallOptions = {}) {
    this.record('deleteMany', options);
    const data = this.data();
    const matched = data.match(filter);
    for (const doc of matched) {
      data.remove(doc);
      this.undoable(options, doc._id, doc);
    }
    return { acknowledged: true, deletedCount: matched.length };
  }

  aggregate(pipeline: Doc[]) {
    return { toArray: async () => new Aggregator(pipeline, {}).run(this.data().match({}).map(cloneDoc)) };
  }

  /**
   * A minimal change stream of this collection's inserts, on a double made
   * with `replicaSet` (as the server allows only there). It announces its
   * resume token at once and emits `change` for each later `insertOne`.
   */
  watch(): DoubleChangeStream {
    if (!this.double.options.replicaSet) {
      throw new MongoServerError({ message: 'The $changeStream stage is only supported on replica sets', code: 40573 });
    }
    const stream = new DoubleChangeStream(this.double.changeStreams, this.db.databaseName, this.collectionName);
    queueMicrotask(() => stream.emit('resumeTokenChanged', { _data: 'start' }));
    return stream;
  }

  private updateFirst(filter: Doc, update: Doc | Doc[], options: CallOptions): { before?: Doc; after: Doc } | null {
    const data = this.data();
    const [before] = data.match(filter, options.sort, 1);
    if (before) {
      const after = updatedDoc(before, update, false);
      data.replace(before, after);
      this.undoable(options, before._id, before);
      return { before, after };
    }
    if (!options.upsert) return null;
    const stored = data.insert(updatedDoc(upsertSeed(filter), update, true));
    this.undoable(options, stored._id, undefined);
    return { after: stored };
  }

  private undoable(options: CallOptions, id: unknown, before: Doc | undefined): void {
    const session = options.session;
    if (session?.inTransaction()) session.recordUndo(() => this.data().restore(id, before));
  }

  private record(method: string, options: CallOptions): void {
    const inTransaction = options.session?.inTransaction() ?? false;
    const transaction = this.double.transactions.at(-1) as Handle | undefined;
    const writeConcern = inTransaction
      ? transaction?.writeConcern
      : (options.writeConcern ?? this.options.writeConcern ?? this.db.options.writeConcern);
    this.double.writes.push({ collection: this.collectionName, method, writeConcern, inTransaction });
  }

  private data(): CollectionData {
    return this.double.data(this.db.databaseName, this.collectionName, true) as CollectionData;
  }
}
