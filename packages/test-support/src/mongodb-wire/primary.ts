import { type Document, ObjectId, Timestamp } from 'bson';
import { CollectionData, type Doc, idKeyOf } from './data.ts';
import { wireError } from './errors.ts';
import type { QueryPlan } from './plan.ts';
import { ReadViews } from './read-views.ts';

/** One command the primary received, as the driver sent it. */
export interface RecordedCommand {
  db: string;
  name: string;
  /** The whole body: `filter`, `hint`, `readConcern`, `writeConcern`, `$readPreference`, `lsid`, `txnNumber`… */
  body: Document;
  connectionId: number;
  /** Each query of the command (reads, and the filters of writes), with the index its hint chose. */
  queries: {
    collection: string;
    filter: Doc;
    hint?: unknown;
    index?: string;
    /** What the query costs by the double's model (`planQuery`), while `costQueries` is on. */
    plan?: QueryPlan;
  }[];
  /** Hints the server refused (BadValue: no such index, or one the query cannot use). */
  refusedHints: unknown[];
  /** `'ok'`, or the code the command (or its first failed statement) failed with. */
  outcome?: 'ok' | number;
}

/** One change of the oplog, as a change stream reports it. */
export interface ChangeEntry {
  /** Position in the oplog; the `i` of its cluster time. */
  seq: number;
  db: string;
  coll: string;
  operationType: 'insert' | 'update' | 'replace' | 'delete' | 'drop' | 'dropDatabase' | 'invalidate';
  documentKey?: Doc;
  fullDocument?: Doc;
  updateDescription?: Doc;
}

/** A transaction, as the write-conflict rules and undo see it. */
export interface WriteOwner {
  /** The oplog position of its snapshot: a document written after it conflicts. */
  readonly snapshotSeq: number;
  readonly locks: Set<string>;
  readonly undo: (() => void)[];
  readonly events: Omit<ChangeEntry, 'seq'>[];
  readonly finished: Promise<void>;
  abortForConflict(): void;
}

/** A statement met a document a transaction holds: it waits for that transaction to end, then runs again. */
export class HeldByTransaction extends Error {
  constructor(readonly until: Promise<void>) {
    super('document held by a transaction');
  }
}

const WRITE_CONFLICT_MESSAGE =
  'Caused by :: Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.';

const START_SECONDS = Math.floor(Date.now() / 1000);
/** The cluster time of an oplog position: one fixed second, the position as its increment. */
export function clusterTime(seq: number): Timestamp {
  return new Timestamp({ t: START_SECONDS, i: seq });
}

/** The largest document the server stores. */
export const MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024;

/**
 * The state of the fake primary: databases of `CollectionData`, the oplog
 * its change streams read, the locks transactions hold, and its place in
 * the replica set (primary, or stepped down until an election ends).
 */
export class PrimaryState {
  readonly databases = new Map<string, Map<string, CollectionData>>();
  readonly oplog: ChangeEntry[] = [];
  /** Oplog entries before this position are gone: resuming before it fails (`ChangeStreamHistoryLost`). */
  oplogStart = 1;
  private seq = 0;
  private readonly locks = new Map<string, WriteOwner>();
  /** What each reader may see of the documents transactions hold or changed after a snapshot. */
  readonly views = new ReadViews();
  private readonly lastWrite = new Map<string, number>();
  private readonly oplogWaiters = new Set<() => void>();
  private readonly majorityWaiters = new Set<() => void>();
  private majority = true;

  /** Bumped on every change of the primary's state, for `hello`'s `topologyVersion`. */
  topologyCounter = 0;
  readonly processId = new ObjectId();
  electionTerm = 1;
  writablePrimary = true;
  /** How far the primary's clock runs from this process's: `hello` answers with its `localTime`, `$$NOW` reads it. */
  clockOffsetMs = 0;
  /**
   * How far the `localTime` that `hello` answers with is off the primary's
   * own clock (`now`): a fault standing for a mismeasured offset, such as a
   * reply held up on its way back. `$$NOW` keeps to the clock.
   */
  localTimeErrorMs = 0;
  /** Whether each recorded query carries its cost (`plan`): a scan of the collection per query, so off unless asked for. */
  costQueries = false;
  /**
   * Called with each command the primary ran and its answer, before the
   * answer is sent: a test's stand-in for another client acting in between
   * (e.g. leasing the jobs a claim has just read).
   */
  afterCommand: ((command: RecordedCommand, answer: Document) => void) | undefined;
  private readonly topologyWaiters = new Set<() => void>();

  /** The primary's clock: this process's, moved by `clockOffsetMs`. */
  now(): Date {
    return new Date(Date.now() + this.clockOffsetMs);
  }

  get operationTime(): Timestamp {
    return clusterTime(this.seq);
  }

  /** The oplog position a write takes. */
  nextSeq(): number {
    this.seq += 1;
    return this.seq;
  }

  get lastSeq(): number {
    return this.seq;
  }

  collection(db: string, name: string): CollectionData | undefined {
    return this.databases.get(db)?.get(name);
  }

  /** The collection, created (as the server creates one on its first write) when missing. */
  ensureCollection(db: string, name: string, options: Document = {}): CollectionData {
    let collections = this.databases.get(db);
    if (!collections) {
      collections = new Map();
      this.databases.set(db, collections);
    }
    let data = collections.get(name);
    if (!data) {
      data = new CollectionData(`${db}.${name}`, options);
      collections.set(name, data);
    }
    return data;
  }

  // --- writes: conflicts, undo, oplog ---

  /** Inserts a document; in a transaction, held by it until it ends. */
  insert(db: string, coll: string, doc: Doc, owner: WriteOwner | undefined): Doc {
    const data = this.ensureCollection(db, coll);
    this.checkCollisions(data, doc, undefined, owner);
    const stored = data.insert(doc);
    const key = `${data.namespace}|${idKeyOf(stored._id)}`;
    try {
      this.claim(key, owner, undefined);
    } catch (error) {
      data.remove(stored);
      throw error;
    }
    this.evictCapped(db, coll, data);
    this.logged(owner, key, undefined, () => data.restore(stored._id, undefined), {
      db,
      coll,
      operationType: 'insert',
      documentKey: { _id: stored._id },
      fullDocument: stored,
    });
    return stored;
  }

  replace(db: string, coll: string, before: Doc, after: Doc, owner: WriteOwner | undefined): void {
    const data = this.ensureCollection(db, coll);
    this.checkCollisions(data, after, idKeyOf(before._id), owner);
    const key = `${data.namespace}|${idKeyOf(before._id)}`;
    this.claim(key, owner, before);
    data.replace(before, after);
    this.logged(owner, key, before, () => data.restore(before._id, before), {
      db,
      coll,
      operationType: 'update',
      documentKey: { _id: before._id },
      updateDescription: updateDescription(before, after),
    });
  }

  remove(db: string, coll: string, doc: Doc, owner: WriteOwner | undefined): void {
    const data = this.ensureCollection(db, coll);
    const key = `${data.namespace}|${idKeyOf(doc._id)}`;
    this.claim(key, owner, doc);
    data.remove(doc);
    this.logged(owner, key, doc, () => data.restore(doc._id, doc), {
      db,
      coll,
      operationType: 'delete',
      documentKey: { _id: doc._id },
    });
  }

  /**
   * A write whose `_id` or unique key collides with a document another transaction wrote and has not
   * committed meets that write, as in the server's index: in a transaction, WriteConflict (112); outside
   * one, it waits for the holder to end (`HeldByTransaction`), then collides with what it committed, or
   * with nothing if it aborted. A collision with a committed document is the caller's duplicate key.
   * `ownId` is the id of the document `doc` replaces (none for an insert).
   */
  private checkCollisions(data: CollectionData, doc: Doc, ownId: string | undefined, owner: WriteOwner | undefined) {
    if (this.locks.size === 0) return; // no transaction holds a document
    for (const colliding of data.collisions(doc, ownId)) {
      const holder = this.locks.get(`${data.namespace}|${idKeyOf(colliding._id)}`);
      if (!holder || holder === owner) continue;
      if (!owner) throw new HeldByTransaction(holder.finished);
      owner.abortForConflict();
      throw wireError(112, WRITE_CONFLICT_MESSAGE);
    }
  }

  /** The end of the transaction holding one of `docs` in `db.coll`, if one does. */
  heldBy(db: string, coll: string, docs: Doc[]): Promise<void> | undefined {
    for (const doc of docs) {
      if (doc._id === undefined) continue;
      const holder = this.locks.get(`${db}.${coll}|${idKeyOf(doc._id)}`);
      if (holder) return holder.finished;
    }
    return undefined;
  }

  /** Releases a transaction's documents; with `commit`, its changes enter the oplog. */
  release(owner: WriteOwner, commit: boolean): void {
    if (commit) for (const event of owner.events) this.append(event);
    for (const key of owner.locks) {
      if (this.locks.get(key) === owner) this.locks.delete(key);
      if (!commit) continue;
      this.lastWrite.set(key, this.seq);
      this.views.changed(key, this.views.before(key), this.seq);
    }
    this.views.closed(owner);
  }

  /** Appends an entry to the oplog (and wakes the change streams waiting on it). */
  append(event: Omit<ChangeEntry, 'seq'>): void {
    this.oplog.push({ ...event, seq: this.nextSeq() });
    wakeAll(this.oplogWaiters);
  }

  /** Resolves at the next oplog entry, or after `ms`. */
  awaitOplog(ms: number): Promise<void> {
    return awaitSignal(this.oplogWaiters, ms);
  }

  /**
   * Takes the document for the writer: a transaction may not write what
   * another holds, nor what was written after its snapshot (WriteConflict);
   * a write outside transactions waits for the holder to end.
   */
  private claim(key: string, owner: WriteOwner | undefined, before: Doc | undefined): void {
    const holder = this.locks.get(key);
    if (!owner) {
      if (holder) throw new HeldByTransaction(holder.finished);
      return;
    }
    if (holder === owner) return;
    if (holder || (this.lastWrite.get(key) ?? 0) > owner.snapshotSeq) {
      owner.abortForConflict();
      throw wireError(112, WRITE_CONFLICT_MESSAGE);
    }
    this.locks.set(key, owner);
    this.views.hold(key, owner, before);
    owner.locks.add(key);
  }

  /** The documents of `db.coll` matching `filter` as `reader` (a transaction, or none) sees them (see `ReadViews`). */
  matchCommitted(db: string, coll: string, filter: Doc, sort: Doc | undefined, reader: WriteOwner | undefined): Doc[] {
    const data = this.collection(db, coll);
    if (!data) return [];
    const order = sort as Record<string, 1 | -1> | undefined;
    return this.views.view(data.namespace, data.match(filter, order), filter, order, reader);
  }

  private logged(
    owner: WriteOwner | undefined,
    key: string,
    before: Doc | undefined,
    undo: () => void,
    event: Omit<ChangeEntry, 'seq'>,
  ): void {
    if (owner) {
      owner.undo.push(undo);
      owner.events.push(event);
      return;
    }
    this.append(event);
    this.lastWrite.set(key, this.seq);
    this.views.changed(key, before, this.seq);
  }

  /** A capped collection with `max` keeps only its newest documents. */
  private evictCapped(db: string, coll: string, data: CollectionData): void {
    const max = data.options.capped ? Number(data.options.max ?? 0) : 0;
    if (max <= 0) return;
    while (data.docs.size > max) {
      const oldest = data.docs.values().next().value as Doc;
      data.remove(oldest);
      this.append({ db, coll, operationType: 'delete', documentKey: { _id: oldest._id } });
    }
  }

  // --- majority ---

  /** Whether a majority of the set acknowledges writes. */
  get majorityAvailable(): boolean {
    return this.majority;
  }

  set majorityAvailable(available: boolean) {
    this.majority = available;
    if (!available) return;
    wakeAll(this.majorityWaiters);
  }

  /**
   * Waits for a majority to acknowledge a write under `writeConcern` (the
   * server's default is majority): at once while it is available; else until
   * `wtimeout`, then resolves to the server's write-concern timeout; without
   * one, until the majority is back or `abandoned` resolves. The command's
   * `maxTimeMS` bounds the wait as well (`maxTimeLeftMs`, what it leaves of
   * it): when it ends first, the write concern error is MaxTimeMSExpired (50),
   * which the driver does not retry a commit after.
   */
  async awaitMajority(
    writeConcern: Document | undefined,
    abandoned: Promise<void>,
    maxTimeLeftMs?: number,
  ): Promise<Document | undefined> {
    const w = writeConcern?.w ?? 'majority';
    if (this.majority || w !== 'majority') return undefined;
    const wtimeout = Number(writeConcern?.wtimeout ?? writeConcern?.wtimeoutMS ?? 0);
    let wake = () => {};
    const back = new Promise<void>((resolve) => {
      wake = resolve;
      this.majorityWaiters.add(resolve);
    });
    const timers: NodeJS.Timeout[] = [];
    const after = <T>(ms: number, outcome: T) =>
      new Promise<T>((resolve) => timers.push(setTimeout(() => resolve(outcome), Math.max(ms, 0))));
    const outcome = await Promise.race([
      back,
      abandoned,
      ...(wtimeout > 0 ? [after(wtimeout, 'wtimeout' as const)] : []),
      ...(maxTimeLeftMs === undefined ? [] : [after(maxTimeLeftMs, 'maxTime' as const)]),
    ]);
    for (const timer of timers) clearTimeout(timer);
    this.majorityWaiters.delete(wake);
    if (outcome === 'maxTime') {
      return { code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' };
    }
    if (outcome !== 'wtimeout') return undefined;
    return {
      code: 64,
      codeName: 'WriteConcernTimeout',
      errmsg: 'waiting for replication timed out',
      errInfo: { wtimeout: true, writeConcern: { w: 'majority', wtimeout, provenance: 'clientSupplied' } },
    };
  }

  // --- topology ---

  /** Marks a change of state that `hello` reports, waking the driver's streaming monitors. */
  topologyChanged(): void {
    this.topologyCounter += 1;
    wakeAll(this.topologyWaiters);
  }

  /** Resolves when the topology changes, or after `ms`. */
  awaitTopologyChange(ms: number, abandoned: Promise<void>): Promise<void> {
    return awaitSignal(this.topologyWaiters, ms, abandoned);
  }
}

/** The top-level fields an update set and removed, as a change stream's `updateDescription` lists them. */
function updateDescription(before: Doc, after: Doc): Doc {
  const updatedFields: Doc = {};
  for (const [field, value] of Object.entries(after)) {
    if (JSON.stringify(before[field]) !== JSON.stringify(value)) updatedFields[field] = value;
  }
  const removedFields = Object.keys(before).filter((field) => !(field in after));
  return { updatedFields, removedFields, truncatedArrays: [] };
}

/** Resolves when one of `waiters` is woken, after `ms`, or when `abandoned` resolves. */
function awaitSignal(waiters: Set<() => void>, ms: number, abandoned?: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      waiters.delete(done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    waiters.add(done);
    void abandoned?.then(done);
  });
}

function wakeAll(waiters: Set<() => void>): void {
  const waiting = [...waiters];
  waiters.clear();
  for (const wake of waiting) wake();
}
