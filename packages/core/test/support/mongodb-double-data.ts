import { isDeepStrictEqual } from 'node:util';
import { Aggregator, update as applyModifier, Query } from 'mingo';
import { type IndexDescription, MongoServerError, ObjectId, type WriteError } from 'mongodb';

/** A stored document of the double. */
export type Doc = Record<string, unknown> & { _id?: unknown };

const DUPLICATE_KEY = 11000;
const INDEX_OPTIONS_CONFLICT = 85;

/** What the double needs of an index (the subset of the driver's `IndexDescription` the store uses). */
export type IndexSpec = IndexDescription & { name: string; key: Record<string, 1 | -1> };

function idKeyOf(id: unknown): string {
  if (typeof id === 'string') return `s:${id}`;
  if (id instanceof ObjectId) return `o:${id.toHexString()}`;
  return `j:${JSON.stringify(id)}`;
}

/** A deep copy of a document; `_id` kept as is (an `ObjectId` must keep its class). */
export function cloneDoc<T extends Doc>(doc: T): T {
  const { _id, ...rest } = doc;
  return { _id, ...structuredClone(rest) } as T;
}

function keyText(values: unknown[]): string {
  return JSON.stringify(values.map((v) => (v instanceof Date ? { $date: v.getTime() } : (v ?? null))));
}

function valueAt(doc: Doc, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  }
  return value;
}

/** The error the server returns for a unique index violation, as the driver surfaces it. */
export function duplicateKeyError(collection: string, index: IndexSpec, keyValue: Record<string, unknown>) {
  return new MongoServerError({
    message: `E11000 duplicate key error collection: ${collection} index: ${index.name} dup key: ${JSON.stringify(keyValue)}`,
    errmsg: `E11000 duplicate key error collection: ${collection} index: ${index.name}`,
    code: DUPLICATE_KEY,
    keyPattern: index.key,
    keyValue,
  });
}

/**
 * One collection's documents and indexes. Every method does its whole work
 * synchronously, so each call is atomic, as a single-document write (or a
 * whole `updateMany`, which is stronger) is in MongoDB. Unique indexes,
 * including partial ones, are enforced with the server's duplicate-key error.
 */
export class CollectionData {
  readonly docs = new Map<string, Doc>();
  readonly indexes = new Map<string, IndexSpec>();
  private readonly uniqueEntries = new Map<string, Map<string, string>>();
  private readonly partials = new Map<string, Query>();

  constructor(
    readonly namespace: string,
    readonly options: Record<string, unknown> = {},
  ) {}

  createIndex(spec: IndexSpec): void {
    const existing = this.indexes.get(spec.name);
    if (existing) {
      if (!isDeepStrictEqual(existing, spec)) {
        throw new MongoServerError({
          message: `An existing index has the same name as the requested index but different options: ${spec.name}`,
          code: INDEX_OPTIONS_CONFLICT,
        });
      }
      return;
    }
    const entries = new Map<string, string>();
    if (spec.partialFilterExpression) this.partials.set(spec.name, new Query(spec.partialFilterExpression, {}));
    for (const [id, doc] of this.docs) {
      const key = spec.unique ? this.entryKey(spec, doc) : null;
      if (key === null) continue;
      if (entries.has(key)) throw duplicateKeyError(this.namespace, spec, this.keyValue(spec, doc));
      entries.set(key, id);
    }
    this.indexes.set(spec.name, structuredClone(spec));
    if (spec.unique) this.uniqueEntries.set(spec.name, entries);
  }

  /** Drops an index, as `dropIndex` does (tests use it to stage a store an earlier version left). */
  dropIndex(name: string): void {
    if (!this.indexes.delete(name))
      throw new MongoServerError({ message: `index not found with name [${name}]`, code: 27 });
    this.partials.delete(name);
    this.uniqueEntries.delete(name);
  }

  /** Changes a TTL index's `expireAfterSeconds`, as `collMod` does. */
  modifyIndex(name: string, expireAfterSeconds: number): void {
    const index = this.indexes.get(name);
    if (!index) throw new MongoServerError({ message: `cannot find index ${name}`, code: 27 });
    index.expireAfterSeconds = expireAfterSeconds;
  }

  /** Matching documents (stored objects: callers clone what they hand out). */
  match(filter: Doc, sort?: Record<string, 1 | -1>, limit?: number): Doc[] {
    const query = new Query(filter, {});
    let found = this.candidates(filter).filter((doc) => query.test(doc));
    if (sort && Object.keys(sort).length > 0) found = new Aggregator([{ $sort: sort }], {}).run(found) as Doc[];
    return limit && limit > 0 ? found.slice(0, limit) : found;
  }

  /** The documents a filter can match: by `_id` when it names ids (as the `_id` index would), else all. */
  private candidates(filter: Doc): Doc[] {
    const id = filter._id;
    const ids = typeof id === 'string' ? [id] : (id as { $in?: unknown } | undefined)?.$in;
    if (!Array.isArray(ids) || !ids.every((value) => typeof value === 'string')) return [...this.docs.values()];
    return ids.map((value) => this.docs.get(idKeyOf(value))).filter((doc): doc is Doc => doc !== undefined);
  }

  /** Inserts, enforcing `_id` and unique indexes; returns the stored copy. */
  insert(doc: Doc): Doc {
    const stored = cloneDoc(doc);
    stored._id ??= new ObjectId();
    const id = idKeyOf(stored._id);
    if (this.docs.has(id)) {
      const idIndex: IndexSpec = { name: '_id_', key: { _id: 1 }, unique: true };
      throw duplicateKeyError(this.namespace, idIndex, { _id: stored._id });
    }
    this.write(id, stored, undefined);
    return stored;
  }

  /** Replaces a stored document with its updated version, enforcing unique indexes. */
  replace(before: Doc, after: Doc): void {
    this.write(idKeyOf(before._id), after, before);
  }

  remove(doc: Doc): void {
    const id = idKeyOf(doc._id);
    this.unindex(doc);
    this.docs.delete(id);
  }

  /** Puts a document back as it was (transaction rollback); no checks. */
  restore(id: unknown, doc: Doc | undefined): void {
    const current = this.docs.get(idKeyOf(id));
    if (current) this.remove(current);
    if (doc) this.write(idKeyOf(id), doc, undefined);
  }

  clear(): void {
    this.docs.clear();
    for (const entries of this.uniqueEntries.values()) entries.clear();
  }

  private write(id: string, doc: Doc, before: Doc | undefined): void {
    for (const [name, entries] of this.uniqueEntries) {
      const index = this.indexes.get(name) as IndexSpec;
      const key = this.entryKey(index, doc);
      const holder = key === null ? undefined : entries.get(key);
      if (holder !== undefined && holder !== id)
        throw duplicateKeyError(this.namespace, index, this.keyValue(index, doc));
    }
    if (before) this.unindex(before);
    for (const [name, entries] of this.uniqueEntries) {
      const key = this.entryKey(this.indexes.get(name) as IndexSpec, doc);
      if (key !== null) entries.set(key, id);
    }
    this.docs.set(id, doc);
  }

  private unindex(doc: Doc): void {
    for (const [name, entries] of this.uniqueEntries) {
      const key = this.entryKey(this.indexes.get(name) as IndexSpec, doc);
      if (key !== null && entries.get(key) === idKeyOf(doc._id)) entries.delete(key);
    }
  }

  private entryKey(index: IndexSpec, doc: Doc): string | null {
    const partial = this.partials.get(index.name);
    if (partial && !partial.test(doc)) return null;
    return keyText(Object.keys(index.key).map((field) => valueAt(doc, field)));
  }

  private keyValue(index: IndexSpec, doc: Doc): Record<string, unknown> {
    return Object.fromEntries(Object.keys(index.key).map((field) => [field, valueAt(doc, field)]));
  }
}

const UPDATE_OPERATORS = new Set(['$set', '$unset', '$inc', '$setOnInsert', '$max', '$min', '$push', '$mul']);

/** The document `update` (operators or a pipeline) makes of `doc`; `doc` is not touched. */
export function updatedDoc(doc: Doc, update: Doc | Doc[], inserting: boolean): Doc {
  const next = cloneDoc(doc);
  if (Array.isArray(update)) {
    const [result] = new Aggregator(update, {}).run([next]) as Doc[];
    return { ...(result as Doc), _id: doc._id };
  }
  const { $setOnInsert, ...modifier } = update as Record<string, Record<string, unknown>>;
  for (const operator of Object.keys(update)) {
    if (!UPDATE_OPERATORS.has(operator)) throw new Error(`the driver double does not support the update ${operator}`);
  }
  applyModifier(next, modifier, [], {}, { cloneMode: 'deep' });
  if (inserting && $setOnInsert) applyModifier(next, { $set: $setOnInsert }, [], {}, { cloneMode: 'deep' });
  return next;
}

/** The document an upsert starts from: the filter's top-level equality fields. */
export function upsertSeed(filter: Doc): Doc {
  const seed: Doc = {};
  for (const [field, value] of Object.entries(filter)) {
    if (field.startsWith('$') || field.includes('.')) continue;
    const isOperator =
      value !== null && typeof value === 'object' && !(value instanceof Date) && !(value instanceof ObjectId);
    if (!isOperator || !Object.keys(value as object).some((k) => k.startsWith('$'))) seed[field] = value;
  }
  seed._id ??= new ObjectId();
  return seed;
}

/** A copy of `doc` with only the fields `projection` keeps (all of them without one). */
export function projected(doc: Doc, projection: Record<string, 0 | 1> | undefined): Doc {
  if (!projection || Object.keys(projection).length === 0) return cloneDoc(doc);
  const [result] = new Aggregator([{ $project: projection }], {}).run([cloneDoc(doc)]) as Doc[];
  return result as Doc;
}

/** A per-document bulk write error as the driver reports it (the driver exports `WriteError` as a type only). */
export function writeError(index: number, error: MongoServerError, op: Doc): WriteError {
  const err = { index, code: error.code as number, errmsg: error.message, errInfo: {}, op };
  return { err, index, code: err.code, errmsg: err.errmsg, errInfo: err.errInfo } as unknown as WriteError;
}
