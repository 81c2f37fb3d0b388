import { isDeepStrictEqual } from 'node:util';
import {
  type CollectionData,
  cloneDoc,
  type Doc,
  type IndexSpec,
  planQuery,
  projected,
  type QueryPlan,
  updatedDoc,
  upsertSeed,
  writeError,
} from '@workq/test-support';
import { Aggregator } from 'mingo';
import {
  type BulkWriteResult,
  MongoBulkWriteError,
  MongoNetworkError,
  MongoServerError,
  MongoWriteConcernError,
  type WriteConcernSettings,
  type WriteError,
} from 'mongodb';
import type { DoubleDb, DoubleSession, MongoDriverDouble, RecordedQuery } from './mongodb-double.ts';
import { DoubleChangeStream } from './mongodb-double-change-stream.ts';

/** What a database or collection handle carries down to each call. */
export interface Handle {
  writeConcern?: WriteConcernSettings;
  readPreference?: unknown;
  readConcern?: unknown;
}

interface CallOptions extends Handle {
  session?: DoubleSession;
  sort?: Record<string, 1 | -1>;
  limit?: number;
  projection?: Record<string, 0 | 1>;
  returnDocument?: 'before' | 'after';
  upsert?: boolean;
  ordered?: boolean;
  hint?: string | Record<string, 1 | -1>;
  maxTimeMS?: number;
  commitQuorum?: number | string;
}

/** One document a write changed: `before` undefined for an insert, `after` undefined for a delete. */
interface Change {
  id: unknown;
  before: Doc | undefined;
  after: Doc | undefined;
}

/** What one write call has changed so far, for faults and transactions to undo. */
interface WriteCall {
  options: CallOptions;
  changes: Change[];
}

type BulkOperation =
  | { updateOne: { filter: Doc; update: Doc | Doc[]; upsert?: boolean; hint?: string | Record<string, 1 | -1> } }
  | { updateMany: { filter: Doc; update: Doc | Doc[]; hint?: string | Record<string, 1 | -1> } }
  | { insertOne: { document: Doc } };

const WRITE_CONCERN_TIMEOUT = 64;
const MAX_TIME_MS_EXPIRED = 50;
const INVALID_OPTIONS = 72;

/** The mode of a read preference given as a string or a driver `ReadPreference`. */
function readPreferenceMode(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  const mode = (value as { mode?: unknown } | undefined)?.mode;
  return typeof mode === 'string' ? mode : undefined;
}

/** The level of a read concern given as a string, a `{ level }` or a driver `ReadConcern`. */
function readConcernLevel(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  const level = (value as { level?: unknown } | undefined)?.level;
  return typeof level === 'string' ? level : undefined;
}

const emptyBulkResult = () => ({
  insertedCount: 0,
  matchedCount: 0,
  modifiedCount: 0,
  deletedCount: 0,
  upsertedCount: 0,
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A wait with no bound, as the server keeps a client waiting for an acknowledgement that cannot come. */
const forever = () => new Promise<never>(() => {});

/**
 * Waits for a majority to acknowledge a write under `writeConcern`: at once
 * while the double's majority is available, else the server's write-concern
 * timeout after `wtimeoutMS` (as the driver reports it for a bulk write or
 * for a single one), or `MaxTimeMSExpired` after a shorter `maxTimeMS` (a
 * commit's `maxCommitTimeMS`), or forever without either.
 */
export async function waitForMajority(
  double: MongoDriverDouble,
  method: string,
  writeConcern: WriteConcernSettings | undefined,
  bulk = false,
  maxTimeMS?: number,
): Promise<void> {
  if (double.majorityAvailable || writeConcern?.w !== 'majority') return;
  const wtimeoutMS = writeConcern.wtimeoutMS ?? writeConcern.wtimeout;
  if (maxTimeMS && !(wtimeoutMS && wtimeoutMS < maxTimeMS)) {
    await sleep(maxTimeMS);
    const errmsg = `operation exceeded time limit (${method})`;
    throw new MongoWriteConcernError({
      ok: 1,
      writeConcernError: { code: MAX_TIME_MS_EXPIRED, codeName: 'MaxTimeMSExpired', errmsg },
    });
  }
  if (!wtimeoutMS) return forever();
  await sleep(wtimeoutMS);
  const errmsg = `waiting for replication timed out (${method})`;
  if (bulk) {
    const result = emptyBulkResult() as unknown as BulkWriteResult;
    throw new MongoBulkWriteError({ message: errmsg, code: WRITE_CONCERN_TIMEOUT }, result);
  }
  throw new MongoWriteConcernError({
    ok: 1,
    writeConcernError: {
      code: WRITE_CONCERN_TIMEOUT,
      codeName: 'WriteConcernTimeout',
      errmsg,
      errInfo: { wtimeout: true },
    },
  });
}

/** The driver's `Collection` methods the store calls. */
export class DoubleCollection {
  constructor(
    private readonly double: MongoDriverDouble,
    private readonly db: DoubleDb,
    readonly collectionName: string,
    private readonly options: Handle,
  ) {}

  /**
   * Builds the indexes not built yet; any conflict refuses the whole call.
   * While the majority is unavailable, a build waits on its commit quorum:
   * until `maxTimeMS` (then the server's `MaxTimeMSExpired`), or forever.
   */
  async createIndexes(specs: IndexSpec[], options: CallOptions = {}): Promise<string[]> {
    this.double.beforeCall();
    const names = specs.map((spec) => spec.name);
    this.double.indexBuilds.push({ collection: this.collectionName, names, options: { ...options } });
    if (options.commitQuorum !== undefined && !this.double.options.replicaSet) {
      throw new MongoServerError({ message: "Standalones can't specify commitQuorum", code: 2, codeName: 'BadValue' });
    }
    const data = this.data();
    const fresh = specs.filter((spec) => !data.checkIndex(spec));
    for (const spec of fresh) data.createIndex(spec);
    if (fresh.length > 0 && !this.double.majorityAvailable) {
      if (!options.maxTimeMS) return forever();
      await sleep(options.maxTimeMS);
      throw new MongoServerError({
        message: 'operation exceeded time limit',
        code: MAX_TIME_MS_EXPIRED,
        codeName: 'MaxTimeMSExpired',
      });
    }
    return names;
  }

  async dropIndex(name: string): Promise<Doc> {
    this.double.beforeCall();
    this.data().dropIndex(name);
    return { ok: 1 };
  }

  /** The `_id` index and those created; the server's `NamespaceNotFound` when the collection does not exist. */
  listIndexes(options: CallOptions = {}) {
    return {
      toArray: async (): Promise<IndexSpec[]> => {
        this.double.beforeCall();
        const data = this.double.readable(this.db.databaseName, this.collectionName, this.readMode(options));
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
    const stored = await this.write('insertOne', options, true, (call) => this.insertDoc(call, doc));
    doc._id ??= stored._id;
    for (const stream of this.double.changeStreams) stream.announce(this.db.databaseName, this.collectionName, stored);
    return { acknowledged: true, insertedId: stored._id };
  }

  /** Inserts `docs`; a change stream of the collection sees each insert that was applied, in order. */
  async insertMany(docs: Doc[], options: CallOptions = {}) {
    const inserted: Doc[] = [];
    const insertedIds = await this.write(
      'insertMany',
      options,
      true,
      (call) => {
        const writeErrors: WriteError[] = [];
        const ids: Record<number, unknown> = {};
        for (const [index, doc] of docs.entries()) {
          try {
            const stored = this.insertDoc(call, doc);
            doc._id ??= stored._id;
            ids[index] = stored._id;
            inserted.push(stored);
          } catch (error) {
            // A transaction's write conflict fails the whole command, as the server reports it, not one document.
            if (!(error instanceof MongoServerError) || error.hasErrorLabel('TransientTransactionError')) throw error;
            writeErrors.push(writeError(index, error, doc));
            if (options.ordered !== false) break;
          }
        }
        if (writeErrors.length > 0) throw bulkWriteError(writeErrors, { insertedCount: Object.keys(ids).length });
        return ids;
      },
      true,
    );
    for (const stored of inserted) {
      for (const stream of this.double.changeStreams)
        stream.announce(this.db.databaseName, this.collectionName, stored);
    }
    return { acknowledged: true, insertedCount: docs.length, insertedIds };
  }

  find(filter: Doc = {}, options: CallOptions = {}) {
    return {
      toArray: async () => this.read('find', filter, options).map((doc) => projected(doc, options.projection)),
    };
  }

  async findOne(filter: Doc = {}, options: CallOptions = {}): Promise<Doc | null> {
    const [doc] = this.read('findOne', filter, { ...options, limit: 1 });
    return doc ? projected(doc, options.projection) : null;
  }

  async findOneAndUpdate(filter: Doc, update: Doc | Doc[], options: CallOptions = {}): Promise<Doc | null> {
    const result = await this.write('findOneAndUpdate', options, true, (call) =>
      this.updateFirst(call, 'findOneAndUpdate', filter, update, options),
    );
    if (!result) return null;
    return cloneDoc(options.returnDocument === 'after' ? result.after : (result.before ?? result.after));
  }

  async updateOne(filter: Doc, update: Doc | Doc[], options: CallOptions = {}) {
    const result = await this.write('updateOne', options, true, (call) =>
      this.updateFirst(call, 'updateOne', filter, update, options),
    );
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
    const { matched, modified } = await this.write('updateMany', options, false, (call) =>
      this.updateAll(call, 'updateMany', filter, update, options),
    );
    return { acknowledged: true, matchedCount: matched, modifiedCount: modified, upsertedCount: 0, upsertedId: null };
  }

  async deleteOne(filter: Doc, options: CallOptions = {}) {
    const deletedCount = await this.write('deleteOne', options, true, (call) => {
      const [first] = this.plannedMatch('deleteOne', filter, options, 1);
      if (first) this.removeDoc(call, first);
      return first ? 1 : 0;
    });
    return { acknowledged: true, deletedCount };
  }

  async deleteMany(filter: Doc, options: CallOptions = {}) {
    const deletedCount = await this.write('deleteMany', options, false, (call) => {
      const matched = this.plannedMatch('deleteMany', filter, options, undefined);
      for (const doc of matched) this.removeDoc(call, doc);
      return matched.length;
    });
    return { acknowledged: true, deletedCount };
  }

  /**
   * `updateOne`, `updateMany` and `insertOne` operations in order (or all of
   * them, unordered). Retryable as a whole unless it has a multi-document operation.
   */
  async bulkWrite(operations: BulkOperation[], options: CallOptions = {}) {
    const retryable = operations.every((operation) => !('updateMany' in operation));
    return this.write(
      'bulkWrite',
      options,
      retryable,
      (call) => {
        const counts = emptyBulkResult();
        const writeErrors: WriteError[] = [];
        for (const [index, operation] of operations.entries()) {
          try {
            if ('updateOne' in operation) {
              const { filter, update, ...rest } = operation.updateOne;
              const result = this.updateFirst(call, 'bulkWrite', filter, update, rest);
              if (result?.before) counts.matchedCount += 1;
              if (result?.before && !isDeepStrictEqual(result.before, result.after)) counts.modifiedCount += 1;
              if (result && !result.before) counts.upsertedCount += 1;
            } else if ('updateMany' in operation) {
              const { filter, update, ...rest } = operation.updateMany;
              const { matched, modified } = this.updateAll(call, 'bulkWrite', filter, update, rest);
              counts.matchedCount += matched;
              counts.modifiedCount += modified;
            } else {
              this.insertDoc(call, operation.insertOne.document);
              counts.insertedCount += 1;
            }
          } catch (error) {
            // A transaction's write conflict fails the whole command, as the server reports it, not one document.
            if (!(error instanceof MongoServerError) || error.hasErrorLabel('TransientTransactionError')) throw error;
            writeErrors.push(writeError(index, error, operation as unknown as Doc));
            if (options.ordered !== false) break;
          }
        }
        if (writeErrors.length > 0) throw bulkWriteError(writeErrors, counts);
        return { ...counts, insertedIds: {}, upsertedIds: {} };
      },
      true,
    );
  }

  aggregate(pipeline: Doc[], options: CallOptions = {}) {
    return {
      toArray: async () => new Aggregator(pipeline, {}).run(this.read('aggregate', {}, options).map(cloneDoc)),
    };
  }

  /**
   * A change stream of this collection's inserts, on a double made with
   * `replicaSet` (as the server allows only there), filtered by `pipeline`.
   * It announces its resume token at once and emits `change` for each later
   * insert acknowledged by a majority; see `DoubleChangeStream` for failures.
   * As the server's `$changeStream` stage, it takes no read concern but
   * `majority`: one the call, collection or database sets otherwise (the
   * driver copies the parent's into the aggregate) fails the stream as it
   * opens, with `InvalidOptions` (72).
   */
  watch(pipeline: Doc[] = [], options: CallOptions = {}): DoubleChangeStream {
    if (!this.double.options.replicaSet) {
      throw new MongoServerError({ message: 'The $changeStream stage is only supported on replica sets', code: 40573 });
    }
    const stream = new DoubleChangeStream(
      this.double.changeStreams,
      this.db.databaseName,
      this.collectionName,
      pipeline,
    );
    const level = readConcernLevel(options.readConcern ?? this.options.readConcern ?? this.db.options.readConcern);
    const refusal =
      level !== undefined && level !== 'majority'
        ? new MongoServerError({
            message: `Aggregation stage $changeStream cannot run with a readConcern other than 'majority'. Current readConcern: ${level}`,
            code: INVALID_OPTIONS,
            codeName: 'InvalidOptions',
          })
        : this.double.watchFaults.shift();
    if (refusal) {
      stream.refuse(refusal);
      return stream;
    }
    queueMicrotask(() => stream.emit('resumeTokenChanged', { _data: 'start' }));
    return stream;
  }

  /**
   * Runs one write: applies it, then plays an armed fault (see `WriteFault`),
   * then waits for its write concern (a transaction waits at its commit).
   */
  private async write<T>(
    method: string,
    options: CallOptions,
    retryable: boolean,
    apply: (call: WriteCall) => T,
    bulk = false,
  ): Promise<T> {
    this.double.beforeCall();
    const writeConcern = this.record(method, options);
    const call: WriteCall = { options, changes: [] };
    const result = apply(call);
    const changed = call.changes.flatMap((change) => (change.after ? [change.after] : []));
    const fault = this.double.takeFault(this.collectionName, changed);
    if (fault) {
      const retried = retryable && this.retriesWrites(options);
      if (!retried || (fault.times ?? 1) >= 2) {
        const kept = fault.appliedDocs ?? call.changes.length;
        for (const change of call.changes.slice(kept).reverse()) this.data().restore(change.id, change.before);
        const lost = new MongoNetworkError(
          `connection to ${this.double.client.options.hosts[0]} closed during ${method}`,
        );
        // A bulk write (insertMany, bulkWrite) reports a connection failure wrapped in its own error, as the driver does.
        throw bulk ? new MongoBulkWriteError(lost, emptyBulkResult() as unknown as BulkWriteResult) : lost;
      }
    }
    if (!options.session?.inTransaction()) await waitForMajority(this.double, method, writeConcern, bulk);
    return result;
  }

  /** Whether the driver retries a retryable write here: with `retryWrites`, on a replica set, outside a transaction. */
  private retriesWrites(options: CallOptions): boolean {
    const { replicaSet, retryWrites } = this.double.options;
    return replicaSet !== undefined && retryWrites !== false && !options.session?.inTransaction();
  }

  /**
   * A read: planned and recorded, from the node the read preference sends it
   * to; at read concern `majority`, of what a majority has acknowledged.
   */
  private read(method: string, filter: Doc, options: CallOptions): Doc[] {
    this.double.beforeCall();
    const mode = this.readMode(options);
    const level = readConcernLevel(options.readConcern ?? this.options.readConcern ?? this.db.options.readConcern);
    const data =
      level === 'majority' && !options.session?.inTransaction()
        ? this.double.majorityReadable(this.db.databaseName, this.collectionName)
        : this.double.readable(this.db.databaseName, this.collectionName, mode);
    if (!data) return []; // the collection does not exist there: the server answers with no documents
    this.plan(method, data, filter, options, mode);
    const found = data.match(filter, options.sort, options.limit);
    this.double.onRead?.(this.double.queries.at(-1) as RecordedQuery, found);
    return found;
  }

  /** The documents a write's filter matches, after planning it as the server would (which checks its hint). */
  private plannedMatch(method: string, filter: Doc, options: CallOptions, limit: number | undefined): Doc[] {
    const data = this.data();
    const { limit: _limit, ...rest } = options;
    this.plan(method, data, filter, limit === undefined ? rest : { ...rest, limit }, 'primary');
    return data.match(filter, options.sort, limit);
  }

  private plan(method: string, data: CollectionData, filter: Doc, options: CallOptions, mode: string): QueryPlan {
    const plan = planQuery(data.plannedIndexes(), data.docs.size, {
      filter,
      sort: options.sort,
      limit: options.limit,
      hint: options.hint,
    });
    const { sort, limit, hint } = options;
    this.double.queries.push({
      collection: this.collectionName,
      method,
      filter,
      ...(sort ? { sort } : {}),
      ...(limit ? { limit } : {}),
      ...(hint ? { hint } : {}),
      readPreference: mode,
      plan,
    });
    return plan;
  }

  private readMode(options: CallOptions): string {
    return (
      readPreferenceMode(options.readPreference) ??
      readPreferenceMode(this.options.readPreference) ??
      readPreferenceMode(this.db.options.readPreference) ??
      this.double.client.readPreferenceMode
    );
  }

  private updateFirst(
    call: WriteCall,
    method: string,
    filter: Doc,
    update: Doc | Doc[],
    options: CallOptions,
  ): { before?: Doc; after: Doc } | null {
    const [before] = this.plannedMatch(method, filter, options, 1);
    if (before) {
      const after = updatedDoc(before, update, false);
      this.replaceDoc(call, before, after);
      return { before, after };
    }
    if (!options.upsert) return null;
    return { after: this.insertDoc(call, updatedDoc(upsertSeed(filter), update, true)) };
  }

  private updateAll(call: WriteCall, method: string, filter: Doc, update: Doc | Doc[], options: CallOptions) {
    const matched = this.plannedMatch(method, filter, options, undefined);
    let modified = 0;
    for (const before of matched) {
      const after = updatedDoc(before, update, false);
      if (isDeepStrictEqual(before, after)) continue;
      this.replaceDoc(call, before, after);
      modified += 1;
    }
    return { matched: matched.length, modified };
  }

  private insertDoc(call: WriteCall, doc: Doc): Doc {
    const stored = this.data().insert(doc);
    this.changed(call, { id: stored._id, before: undefined, after: stored });
    return stored;
  }

  private replaceDoc(call: WriteCall, before: Doc, after: Doc): void {
    this.data().replace(before, after);
    this.changed(call, { id: before._id, before, after });
  }

  private removeDoc(call: WriteCall, doc: Doc): void {
    this.data().remove(doc);
    this.changed(call, { id: doc._id, before: doc, after: undefined });
  }

  /** Records a change a write made; one in a transaction to a document another open transaction wrote is undone and refused. */
  private changed(call: WriteCall, change: Change): void {
    const session = call.options.session;
    if (session?.inTransaction()) {
      try {
        session.claimDocument(`${this.db.databaseName}.${this.collectionName}:${JSON.stringify(change.id)}`);
      } catch (conflict) {
        this.data().restore(change.id, change.before);
        throw conflict;
      }
      session.recordUndo(() => this.data().restore(change.id, change.before));
    }
    call.changes.push(change);
  }

  /** Records a write with its effective write concern, and returns that. */
  private record(method: string, options: CallOptions): WriteConcernSettings | undefined {
    const inTransaction = options.session?.inTransaction() ?? false;
    const transaction = this.double.transactions.at(-1) as Handle | undefined;
    const writeConcern = inTransaction
      ? transaction?.writeConcern
      : (options.writeConcern ?? this.options.writeConcern ?? this.db.options.writeConcern);
    this.double.writes.push({ collection: this.collectionName, method, writeConcern, inTransaction });
    return writeConcern;
  }

  private data(): CollectionData {
    return this.double.data(this.db.databaseName, this.collectionName, true) as CollectionData;
  }
}

/** A bulk write's failure with per-document errors, as the driver throws it. */
function bulkWriteError(writeErrors: WriteError[], counts: Record<string, number>): MongoBulkWriteError {
  const first = writeErrors[0] as WriteError;
  const result = { ...emptyBulkResult(), ...counts };
  return new MongoBulkWriteError(
    { message: first.errmsg ?? 'write error', code: first.code, writeErrors },
    result as unknown as BulkWriteResult,
  );
}
