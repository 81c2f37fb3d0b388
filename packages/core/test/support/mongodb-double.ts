import { CollectionData, type Doc, type IndexSpec, type QueryPlan } from '@workq/test-support';
import { MongoNotConnectedError, MongoServerError, type WriteConcernSettings } from 'mongodb';
import type { DoubleChangeStream } from './mongodb-double-change-stream.ts';
import { DoubleCollection, type Handle, waitForMajority } from './mongodb-double-collection.ts';

/** One write the double received, with the write concern it would have run under. */
export interface RecordedWrite {
  collection: string;
  method: string;
  /** The effective write concern: the call's, else the collection's, else the database's; a transaction's own in one. */
  writeConcern: WriteConcernSettings | undefined;
  inTransaction: boolean;
}

/** One query the double ran (a read, or the filter of a write), with the plan the server would use. */
export interface RecordedQuery {
  collection: string;
  method: string;
  filter: Doc;
  sort?: Record<string, 1 | -1>;
  limit?: number;
  hint?: string | Record<string, 1 | -1>;
  /** The effective read preference mode (`'primary'` for writes). */
  readPreference: string;
  plan: QueryPlan;
}

/** One `createIndexes` call, with the options it was sent with (`maxTimeMS`, `commitQuorum`). */
export interface RecordedIndexBuild {
  collection: string;
  names: string[];
  options: Record<string, unknown>;
}

/**
 * A write cut off by a network error after the server applied it. A
 * retryable write (single-document writes, `insertMany`, a `bulkWrite`
 * without multi-document operations, on a replica set with `retryWrites`) is
 * retried by the driver and answered from the server's record of it, so it
 * succeeds, unless `times` is 2 or more: then the retry fails too. Any other
 * write (`updateMany`, `deleteMany`) is never retried and fails.
 */
export interface WriteFault {
  collection: string;
  /** Only a write that changes a document into one this accepts fails (e.g. a job becoming `active`). */
  when?: (after: Doc) => boolean;
  /** How many documents the server changed before the connection broke. @defaultValue all of them */
  appliedDocs?: number;
  /** Connection failures in a row (the first try, then its retry). @defaultValue 1 */
  times?: number;
}

export interface MongoDriverDoubleOptions {
  /** Answer `hello` as a member of this replica set (change streams, retryable writes). @defaultValue none: a standalone */
  replicaSet?: string;
  /** Whether transactions run; `false` answers like a standalone server (code 20). @defaultValue true */
  transactions?: boolean;
  /** The client's read preference mode, as `?readPreference=` in a connection string sets it. @defaultValue 'primary' */
  readPreference?: string;
  /**
   * A secondary that has applied nothing since the last `replicate()`: reads
   * sent to secondaries see the data as it was then. @defaultValue false: every read sees every write
   */
  laggingSecondary?: boolean;
  /** The client's `retryWrites`. @defaultValue true */
  retryWrites?: boolean;
  /** Run the TTL monitor, by the real clock, before every call, as if it had just run. @defaultValue false */
  ttlMonitor?: boolean;
}

/**
 * A test double of the MongoDB driver calls the MongoDB store makes, on
 * `mingo` (MongoDB's query, sort, update and aggregation semantics in JS).
 * Not a database, and no isolation between a transaction and other calls
 * (a failed transaction is rolled back). Where the real server is strict,
 * so is the double: index conflicts (85, 86) and TTL ranges (67); hints,
 * which must name an index the query can use (a partial index only when the
 * query implies its filter); reads sent to a lagging secondary; writes cut
 * off after they were applied, retried only where the driver retries; a
 * majority that cannot acknowledge; change streams that fail or are
 * invalidated; the TTL monitor.
 */
export class MongoDriverDouble {
  /** Every write received, in order. */
  readonly writes: RecordedWrite[] = [];
  /** Every query run (reads, and the filters of writes), in order. */
  readonly queries: RecordedQuery[] = [];
  /** Every `createIndexes` call. */
  readonly indexBuilds: RecordedIndexBuild[] = [];
  /** The options of every transaction started. */
  readonly transactions: Record<string, unknown>[] = [];
  readonly client: DoubleClient;
  readonly databases = new Map<string, Map<string, CollectionData>>();
  /** Open change streams (see `DoubleCollection.watch`). */
  readonly changeStreams = new Set<DoubleChangeStream>();
  /** The documents open transactions have written (`db.collection:_id`), by the session that wrote each. */
  readonly transactionWrites = new Map<string, DoubleSession>();
  /** The errors the server refuses the next change streams with as they open, one each, in order. */
  readonly watchFaults: Error[] = [];
  /**
   * The data as a majority has it while `majorityAvailable` is `false`: as
   * it was when the majority stopped acknowledging.
   */
  private majorityView: Map<string, Map<string, CollectionData>> | null = null;
  /**
   * Called after each read with the documents it found, before the caller
   * gets them: a test's stand-in for what other clients do meanwhile.
   */
  onRead: ((query: RecordedQuery, found: readonly Doc[]) => void) | undefined;
  private readonly faults: WriteFault[] = [];
  private secondary: Map<string, Map<string, CollectionData>> | null;

  constructor(readonly options: MongoDriverDoubleOptions = {}) {
    this.client = new DoubleClient(this);
    this.secondary = options.laggingSecondary ? new Map() : null;
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

  /** The collection as a read with this read preference mode sees it: the primary's, or a lagging secondary's. */
  readable(dbName: string, name: string, mode: string): CollectionData | undefined {
    if (!this.secondary || mode === 'primary' || mode === 'primaryPreferred') return this.collection(dbName, name);
    return this.secondary.get(dbName)?.get(name);
  }

  /** Brings the lagging secondary up to date with every write so far. */
  replicate(): void {
    if (this.secondary) this.secondary = this.copyOfData();
  }

  /**
   * Whether a majority of the replica set acknowledges writes. When `false`,
   * a majority write is applied but fails after its `wtimeoutMS` with the
   * server's write-concern timeout (code 64), or never answers without one;
   * an index build waits on its commit quorum until its `maxTimeMS` (code 50);
   * and a read at read concern `majority` sees the data as it was when the
   * majority stopped acknowledging, none of the writes since.
   */
  get majorityAvailable(): boolean {
    return this.majorityView === null;
  }

  set majorityAvailable(available: boolean) {
    if (available) this.majorityView = null;
    else this.majorityView ??= this.copyOfData();
  }

  /** The collection as a read at read concern `majority` sees it (see `majorityAvailable`). */
  majorityReadable(dbName: string, name: string): CollectionData | undefined {
    return this.majorityView ? this.majorityView.get(dbName)?.get(name) : this.collection(dbName, name);
  }

  private copyOfData(): Map<string, Map<string, CollectionData>> {
    return new Map(
      [...this.databases].map(([dbName, collections]) => [
        dbName,
        new Map([...collections].map(([name, data]) => [name, data.copy()])),
      ]),
    );
  }

  /** Cuts off a coming write (see `WriteFault`). */
  failWrite(fault: WriteFault): void {
    this.faults.push(fault);
  }

  /** The fault armed for a write on `collection` that changed documents into `changed`, taken off the list. */
  takeFault(collection: string, changed: Doc[]): WriteFault | undefined {
    const index = this.faults.findIndex(
      (fault) => fault.collection === collection && (!fault.when || changed.some((doc) => fault.when?.(doc))),
    );
    return index === -1 ? undefined : this.faults.splice(index, 1)[0];
  }

  /** Runs the TTL monitor at `now` over every collection; resolves to how many documents it deleted. */
  expireTtl(now: Date = new Date()): number {
    let removed = 0;
    for (const collections of this.databases.values())
      for (const data of collections.values()) removed += data.expire(now);
    return removed;
  }

  /** What every call does first: the TTL monitor, when the double runs one. */
  beforeCall(): void {
    if (this.options.ttlMonitor) this.expireTtl();
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

  /** The client's read preference mode. */
  get readPreferenceMode(): string {
    return this.double.options.readPreference ?? 'primary';
  }

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

/** The server's error for a write to a document another open transaction wrote: the driver retries the transaction. */
const WRITE_CONFLICT = 112;
/** How long the driver's `withTransaction` retries a transaction that failed with a transient error. */
const TRANSACTION_RETRY_MS = 120_000;

/**
 * A session whose transaction rolls back its writes if the callback throws
 * or aborts it. As on the server, a write in a transaction to a document
 * that another open transaction has written fails at once with
 * `WriteConflict` (112, labelled `TransientTransactionError`), and, as the
 * driver's `withTransaction`, the whole callback is then run again, after a
 * short jittered backoff, for up to two minutes. Writes outside transactions
 * are not held back by an open transaction's writes (the server would make
 * them wait for its end), and reads see every write at once.
 */
export class DoubleSession {
  private undo: (() => void)[] | null = null;
  private aborted = false;
  private readonly written = new Set<string>();

  constructor(private readonly double: MongoDriverDouble) {}

  inTransaction(): boolean {
    return this.undo !== null;
  }

  /** Records how to undo one write made in this session's transaction. */
  recordUndo(step: () => void): void {
    this.undo?.push(step);
  }

  /**
   * Marks the document `key` names as written by this session's transaction;
   * throws the server's `WriteConflict` when another open transaction wrote it.
   */
  claimDocument(key: string): void {
    const holder = this.double.transactionWrites.get(key);
    if (holder !== undefined && holder !== this) {
      throw new MongoServerError({
        message: 'Caused by :: Write conflict during plan execution and yielding is disabled.',
        code: WRITE_CONFLICT,
        codeName: 'WriteConflict',
        errorLabels: ['TransientTransactionError'],
      });
    }
    this.double.transactionWrites.set(key, this);
    this.written.add(key);
  }

  async abortTransaction(): Promise<void> {
    if (!this.undo) return;
    this.rollBack();
    this.aborted = true;
  }

  async withTransaction<T>(callback: (session: DoubleSession) => Promise<T>, options: Record<string, unknown> = {}) {
    if (this.double.options.transactions === false) {
      throw new MongoServerError({
        message: 'Transaction numbers are only allowed on a replica set member or mongos',
        code: 20,
        codeName: 'IllegalOperation',
      });
    }
    const deadline = Date.now() + TRANSACTION_RETRY_MS;
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0)
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(5 * 1.5 ** attempt, 500)));
      this.double.transactions.push(options);
      this.undo = [];
      this.aborted = false;
      let result: T;
      try {
        result = await callback(this);
      } catch (error) {
        if (this.undo) this.rollBack();
        const transient = error instanceof MongoServerError && error.hasErrorLabel('TransientTransactionError');
        if (transient && Date.now() < deadline) continue;
        throw error;
      }
      if (this.aborted) return result;
      this.undo = null;
      this.release();
      // The commit is the transaction's one majority write.
      const writeConcern = options.writeConcern as WriteConcernSettings | undefined;
      const maxCommitTimeMS = options.maxCommitTimeMS as number | undefined;
      await waitForMajority(this.double, 'commitTransaction', writeConcern, false, maxCommitTimeMS);
      return result;
    }
  }

  async endSession(): Promise<void> {
    if (this.undo) this.rollBack();
  }

  private rollBack(): void {
    for (const step of (this.undo ?? []).reverse()) step();
    this.undo = null;
    this.release();
  }

  private release(): void {
    for (const key of this.written) this.double.transactionWrites.delete(key);
    this.written.clear();
  }
}

export class DoubleDb {
  constructor(
    readonly double: MongoDriverDouble,
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
    // As the driver does once its client was closed: it never reconnects on its own.
    if (this.double.client.closed)
      throw new MongoNotConnectedError('Client must be connected before running operations');
    if (command.ping === 1) return { ok: 1 };
    if (command.hello === 1) {
      const setName = this.double.options.replicaSet;
      return setName ? { isWritablePrimary: true, setName, ok: 1 } : { isWritablePrimary: true, ok: 1 };
    }
    if (typeof command.createIndexes === 'string') {
      const { createIndexes: name, indexes, writeConcern: _, ...options } = command;
      await this.collection(name).createIndexes(indexes as IndexSpec[], options);
      return { ok: 1 };
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
