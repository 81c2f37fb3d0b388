import { isDeepStrictEqual } from 'node:util';
import { Aggregator, update as applyModifier, Query } from 'mingo';
import { type IndexDescription, MongoServerError, ObjectId, type WriteError } from 'mongodb';
import { partialFilterRefusal } from './partial-filters.ts';
import { compareValues, type PlannedIndex } from './plan.ts';
import { scalarFilter } from './scalar-filter.ts';

/** A stored document. */
export type Doc = Record<string, unknown> & { _id?: unknown };

const DUPLICATE_KEY = 11000;
const CANNOT_CREATE_INDEX = 67;
const INDEX_OPTIONS_CONFLICT = 85;
const INDEX_KEY_SPECS_CONFLICT = 86;
const INVALID_INDEX_SPECIFICATION_OPTION = 197;
/** The largest `expireAfterSeconds` the server accepts. */
const MAX_TTL_SECONDS = 2_147_483_647;

/** What the double needs of an index (the subset of the driver's `IndexDescription` the store uses). */
export type IndexSpec = IndexDescription & { name: string; key: Record<string, 1 | -1> };

export function idKeyOf(id: unknown): string {
  if (typeof id === 'string') return `s:${id}`;
  if (id instanceof ObjectId) return `o:${id.toHexString()}`;
  return `j:${JSON.stringify(id)}`;
}

/** Whether two indexes have the same key (in order) and partial filter: what the server identifies an index by. */
function sameDefinition(a: IndexSpec, b: IndexSpec): boolean {
  return (
    isDeepStrictEqual(Object.entries(a.key), Object.entries(b.key)) &&
    isDeepStrictEqual(a.partialFilterExpression, b.partialFilterExpression)
  );
}

/**
 * Refuses an `expireAfterSeconds` as the server's index validation does, with CannotCreateIndex (67): not a
 * number, NaN, outside a 32-bit integer once truncated (the server keeps a fraction and truncates it where it
 * reads it), or negative.
 */
function checkTtl(expireAfterSeconds: unknown): void {
  const why = ttlRefusal(expireAfterSeconds);
  if (why === null) return;
  throw new MongoServerError({
    message: `TTL index 'expireAfterSeconds' option ${why}`,
    code: CANNOT_CREATE_INDEX,
    codeName: 'CannotCreateIndex',
  });
}

function ttlRefusal(expireAfterSeconds: unknown): string | null {
  if (typeof expireAfterSeconds !== 'number') {
    return `must be numeric, but received a type of '${typeof expireAfterSeconds}'`;
  }
  if (Number.isNaN(expireAfterSeconds)) return 'must not be NaN';
  const whole = Math.trunc(expireAfterSeconds);
  if (whole > MAX_TTL_SECONDS || whole < -MAX_TTL_SECONDS - 1) return 'must be within the range of a 32-bit integer';
  return whole < 0 ? 'cannot be less than 0' : null;
}

/**
 * Refuses a TTL index the server refuses: its `expireAfterSeconds` (`checkTtl`); a key of more than one field
 * (67: TTL indexes are single-field indexes); on `_id` (197: the field is not valid for an `_id` index).
 */
function checkTtlIndex(spec: IndexSpec): void {
  checkTtl(spec.expireAfterSeconds);
  const fields = Object.keys(spec.key);
  if (fields.length === 1 && fields[0] === '_id') {
    throw new MongoServerError({
      message: `The field 'expireAfterSeconds' is not valid for an _id index specification. Specification: ${JSON.stringify(spec)}`,
      code: INVALID_INDEX_SPECIFICATION_OPTION,
      codeName: 'InvalidIndexSpecificationOption',
    });
  }
  if (fields.length !== 1) {
    throw new MongoServerError({
      message: `TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: ${JSON.stringify(spec)}`,
      code: CANNOT_CREATE_INDEX,
      codeName: 'CannotCreateIndex',
    });
  }
}

/**
 * The time a TTL index reads off a value: a date's, or an array's earliest date (its index holds each element,
 * and the monitor scans from the earliest date up). Any other value never expires: `undefined`.
 */
function ttlTime(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  if (!Array.isArray(value)) return undefined;
  const times = value.filter((item): item is Date => item instanceof Date).map((date) => date.getTime());
  return times.length > 0 ? Math.min(...times) : undefined;
}

/** A deep copy of a document; `_id` kept as is (an `ObjectId` must keep its class). */
export function cloneDoc<T extends Doc>(doc: T): T {
  const { _id, ...rest } = doc;
  return { _id, ...structuredClone(rest) } as T;
}

function keyText(values: unknown[]): string {
  return JSON.stringify(values.map((v) => (v instanceof Date ? { $date: v.getTime() } : (v ?? null))));
}

/** The value at a dotted path of a document. */
export function valueAt(doc: Doc, path: string): unknown {
  if (!path.includes('.')) return doc[path];
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
 * synchronously; what a driver call may leave half done (an interrupted
 * `updateMany`) is the collection double's to stage. Unique indexes,
 * including partial ones, are enforced with the server's duplicate-key error.
 */
export class CollectionData {
  readonly docs = new Map<string, Doc>();
  readonly indexes = new Map<string, IndexSpec>();
  private readonly uniqueEntries = new Map<string, Map<string, string>>();
  private readonly partials = new Map<string, Query>();
  /** The ids each partial index holds. */
  private readonly partialMembers = new Map<string, Set<string>>();
  /**
   * The ids by value of each index's leading field, so an equality on it
   * finds its documents without a scan (the field is dropped from here once
   * a document holds an array there).
   */
  private readonly lookups = new Map<string, Map<string, Set<string>>>();

  constructor(
    readonly namespace: string,
    readonly options: Record<string, unknown> = {},
  ) {}

  /**
   * Creates an index, refusing what the server refuses: the same name with
   * another key or partial filter (86), the same name or the same key and
   * partial filter with other options (85), a TTL index the server refuses (`checkTtlIndex`), a partial
   * filter the server refuses (`partialFilterRefusal`).
   */
  createIndex(spec: IndexSpec): void {
    if (this.checkIndex(spec)) return;
    const entries = new Map<string, string>();
    if (spec.partialFilterExpression) {
      const partial = new Query(spec.partialFilterExpression, {});
      this.partials.set(spec.name, partial);
      const members = [...this.docs].filter(([, doc]) => partial.test(doc)).map(([id]) => id);
      this.partialMembers.set(spec.name, new Set(members));
    }
    for (const [id, doc] of this.docs) {
      const key = spec.unique ? this.entryKey(spec, doc) : null;
      if (key === null) continue;
      if (entries.has(key)) throw duplicateKeyError(this.namespace, spec, this.keyValue(spec, doc));
      entries.set(key, id);
    }
    this.indexes.set(spec.name, structuredClone(spec));
    if (spec.unique) this.uniqueEntries.set(spec.name, entries);
    this.addLookup(Object.keys(spec.key)[0]);
  }

  /** Throws what the server answers to creating `spec`; `true` when it exists already, as specified. */
  checkIndex(spec: IndexSpec): boolean {
    const refused = spec.partialFilterExpression ? partialFilterRefusal(spec.partialFilterExpression) : null;
    if (refused) throw refused;
    const existing = this.indexes.get(spec.name);
    if (existing) {
      if (!sameDefinition(existing, spec)) {
        throw new MongoServerError({
          message: `An existing index has the same name as the requested index but a different key or partial filter: ${spec.name}`,
          code: INDEX_KEY_SPECS_CONFLICT,
          codeName: 'IndexKeySpecsConflict',
        });
      }
      if (!isDeepStrictEqual(existing, spec)) {
        throw new MongoServerError({
          message: `An existing index has the same name as the requested index but different options: ${spec.name}`,
          code: INDEX_OPTIONS_CONFLICT,
          codeName: 'IndexOptionsConflict',
        });
      }
      return true;
    }
    const twin = [...this.indexes.values()].find((index) => sameDefinition(index, spec));
    if (twin) {
      throw new MongoServerError({
        message: `Index already exists with a different name: ${twin.name}`,
        code: INDEX_OPTIONS_CONFLICT,
        codeName: 'IndexOptionsConflict',
      });
    }
    if (spec.expireAfterSeconds !== undefined) checkTtlIndex(spec);
    return false;
  }

  /** The `_id` index and the created ones, each with the documents it holds, for `planQuery`. */
  plannedIndexes(): PlannedIndex[] {
    const all = () => [...this.docs.values()];
    const planned: PlannedIndex[] = [{ spec: { name: '_id_', key: { _id: 1 } }, entries: all }];
    for (const spec of this.indexes.values()) {
      const members = this.partialMembers.get(spec.name);
      const held = () => [...(members ?? [])].map((id) => this.docs.get(id) as Doc);
      planned.push({ spec, entries: members ? held : all });
    }
    return planned;
  }

  /**
   * The documents the TTL monitor deletes at `now`, as the server's pass over each TTL index finds them: the
   * documents the index holds (a partial index, only those its filter admits) whose indexed field is a date,
   * or an array whose earliest date is, at or before `now` less `expireAfterSeconds`. Any other value, or no
   * value, never expires. Read only: the monitor deletes them (`ttl-monitor.ts`).
   */
  expired(now: Date): Doc[] {
    const found = new Map<string, Doc>();
    for (const index of this.indexes.values()) {
      const [field, ...others] = Object.keys(index.key);
      if (typeof index.expireAfterSeconds !== 'number' || field === undefined || others.length > 0) continue;
      const cutoff = now.getTime() - Math.trunc(index.expireAfterSeconds) * 1000;
      const held = this.partialMembers.get(index.name) ?? this.docs.keys();
      for (const id of held) {
        const doc = this.docs.get(id);
        const time = doc === undefined ? undefined : ttlTime(valueAt(doc, field));
        if (doc !== undefined && time !== undefined && time <= cutoff) found.set(id, doc);
      }
    }
    return [...found.values()];
  }

  /** A copy of the documents and indexes, as a secondary that has applied everything so far holds them. */
  copy(): CollectionData {
    const copy = new CollectionData(this.namespace, this.options);
    for (const spec of this.indexes.values()) copy.createIndex(structuredClone(spec));
    for (const doc of this.docs.values()) copy.insert(doc);
    return copy;
  }

  /** Drops an index, as `dropIndex` does (tests use it to stage a store an earlier version left). */
  dropIndex(name: string): void {
    if (!this.indexes.delete(name))
      throw new MongoServerError({ message: `index not found with name [${name}]`, code: 27 });
    this.partials.delete(name);
    this.partialMembers.delete(name);
    this.uniqueEntries.delete(name);
  }

  /** Changes a TTL index's `expireAfterSeconds`, as `collMod` does. */
  modifyIndex(name: string, expireAfterSeconds: number): void {
    const index = this.indexes.get(name);
    if (!index) throw new MongoServerError({ message: `cannot find index ${name}`, code: 27 });
    checkTtl(expireAfterSeconds);
    index.expireAfterSeconds = expireAfterSeconds;
  }

  /** Matching documents (stored objects: callers clone what they hand out). */
  match(filter: Doc, sort?: Record<string, 1 | -1>, limit?: number): Doc[] {
    const ids = namedIds(filter._id);
    // Documents found by the ids an `_id` equality or `$in` alone names hold one of them: the rest of the
    // filter decides (testing a `$in` of n ids against n documents again would cost n² comparisons).
    const { _id, ...rest } = filter;
    const tested = ids && isIdsOnly(_id) ? rest : filter;
    let query: Query | undefined;
    const full = (doc: Doc) => {
      query ??= new Query(tested, {});
      return query.test(doc);
    };
    const quick = scalarFilter(tested);
    // Plain top-level equalities rule most documents out before the full query runs.
    const equalities = Object.entries(filter).filter(([field, value]) => !field.startsWith('$') && isPlain(value));
    const passes = (doc: Doc) =>
      equalities.every(([field, value]) => {
        const held = valueAt(doc, field);
        return held === value || Array.isArray(held);
      }) &&
      (quick?.(doc) ?? full(doc));
    const found = sortedDocs(this.candidates(filter, ids).filter(passes), sort);
    return limit && limit > 0 ? found.slice(0, limit) : found;
  }

  /** The documents a filter can match: by `_id` when it names ids (as the `_id` index would), else all. */
  private candidates(filter: Doc, ids: string[] | undefined): Doc[] {
    if (ids) {
      return [...new Set(ids)].map((value) => this.docs.get(idKeyOf(value))).filter((doc): doc is Doc => !!doc);
    }
    let narrowest: Set<string>[] | undefined;
    let narrowestSize = Number.POSITIVE_INFINITY;
    for (const [field, byValue] of this.lookups) {
      const points = pointValues(filter[field]);
      if (!points) continue;
      const sets = points.flatMap((value) => byValue.get(keyText([value])) ?? []);
      const size = sets.reduce((sum, ids) => sum + ids.size, 0);
      if (size < narrowestSize) {
        narrowest = sets;
        narrowestSize = size;
      }
    }
    if (!narrowest) return [...this.docs.values()];
    const held = narrowest.length === 1 ? (narrowest[0] as Set<string>) : new Set(narrowest.flatMap((set) => [...set]));
    return [...held].map((key) => this.docs.get(key)).filter((doc): doc is Doc => doc !== undefined);
  }

  private addLookup(field: string | undefined): void {
    if (field === undefined || field === '_id' || field.includes('$') || this.lookups.has(field)) return;
    const byValue = new Map<string, Set<string>>();
    this.lookups.set(field, byValue);
    for (const [id, doc] of this.docs) this.lookUp(field, byValue, id, doc);
  }

  private lookUp(field: string, byValue: Map<string, Set<string>>, id: string, doc: Doc): void {
    const value = valueAt(doc, field);
    if (Array.isArray(value)) {
      this.lookups.delete(field);
      return;
    }
    const key = keyText([value]);
    let ids = byValue.get(key);
    if (!ids) {
      ids = new Set();
      byValue.set(key, ids);
    }
    ids.add(id);
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

  /**
   * The stored documents a write of `doc` in place of the document with id `ownId` (none, for an insert)
   * would collide with: the one holding its `_id`, and those holding its key in a unique index.
   */
  collisions(doc: Doc, ownId?: string): Doc[] {
    const ids = new Set<string>();
    if (doc._id !== undefined && ownId === undefined && this.docs.has(idKeyOf(doc._id))) ids.add(idKeyOf(doc._id));
    for (const [name, entries] of this.uniqueEntries) {
      const key = this.entryKey(this.indexes.get(name) as IndexSpec, doc);
      const holder = key === null ? undefined : entries.get(key);
      if (holder !== undefined && holder !== ownId) ids.add(holder);
    }
    return [...ids].flatMap((id): Doc[] => {
      const doc = this.docs.get(id);
      return doc ? [doc] : [];
    });
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
    for (const members of this.partialMembers.values()) members.clear();
    for (const byValue of this.lookups.values()) byValue.clear();
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
    for (const [name, members] of this.partialMembers) if (this.partials.get(name)?.test(doc)) members.add(id);
    for (const [field, byValue] of [...this.lookups]) this.lookUp(field, byValue, id, doc);
    this.docs.set(id, doc);
  }

  private unindex(doc: Doc): void {
    for (const [name, entries] of this.uniqueEntries) {
      const key = this.entryKey(this.indexes.get(name) as IndexSpec, doc);
      if (key !== null && entries.get(key) === idKeyOf(doc._id)) entries.delete(key);
    }
    for (const members of this.partialMembers.values()) members.delete(idKeyOf(doc._id));
    for (const [field, byValue] of this.lookups) byValue.get(keyText([valueAt(doc, field)]))?.delete(idKeyOf(doc._id));
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
  if (!applyScalarUpdate(next, modifier)) applyModifier(next, modifier, [], {}, { cloneMode: 'deep' });
  if (inserting && $setOnInsert) applyModifier(next, { $set: $setOnInsert }, [], {}, { cloneMode: 'deep' });
  return next;
}

const SCALAR_OPERATORS = new Set(['$set', '$unset', '$inc']);

/**
 * Applies `$set`, `$unset` and `$inc` of scalar and date values to top-level fields of `doc` in place, as
 * the general update would (a new field goes last, an unset field is removed, `$inc` adds to a number or
 * sets a missing field); `false`, with `doc` untouched, for any other update, which the general one applies.
 * The store's own updates are of this kind, and the general path costs far more per document.
 */
function applyScalarUpdate(doc: Doc, modifier: Record<string, Record<string, unknown>>): boolean {
  const fields = new Set<string>();
  for (const [operator, operand] of Object.entries(modifier)) {
    const entries = Object.entries(operand ?? {});
    if (!SCALAR_OPERATORS.has(operator) || entries.length === 0) return false;
    for (const [field, value] of entries) {
      if (field === '_id' || field.includes('.') || field.startsWith('$') || fields.has(field)) return false;
      fields.add(field);
      if (operator === '$set' && !isPlain(value) && !(value instanceof Date)) return false;
      if (operator === '$inc' && (typeof value !== 'number' || !['number', 'undefined'].includes(typeof doc[field]))) {
        return false;
      }
    }
  }
  for (const [operator, operand] of Object.entries(modifier)) {
    for (const [field, value] of Object.entries(operand)) {
      if (operator === '$unset') delete doc[field];
      else if (operator === '$inc') doc[field] = ((doc[field] as number | undefined) ?? 0) + (value as number);
      else doc[field] = value instanceof Date ? new Date(value.getTime()) : value;
    }
  }
  return true;
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
  return projectedAll([doc], projection)[0] as Doc;
}

/** `projected` of each of `docs`, in order, through one projection stage. */
export function projectedAll(docs: Doc[], projection: Record<string, 0 | 1> | undefined): Doc[] {
  const copies = docs.map(cloneDoc);
  if (!projection || Object.keys(projection).length === 0) return copies;
  return new Aggregator([{ $project: projection }], {}).run(copies) as Doc[];
}

/** A per-document bulk write error as the driver reports it (the driver exports `WriteError` as a type only). */
export function writeError(index: number, error: MongoServerError, op: Doc): WriteError {
  const err = { index, code: error.code as number, errmsg: error.message, errInfo: {}, op };
  return { err, index, code: err.code, errmsg: err.errmsg, errInfo: err.errInfo } as unknown as WriteError;
}

function isPlain(value: unknown): boolean {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

/**
 * Documents in `sort` order: compared field by field in BSON order where
 * every sorted value is a scalar, a date or an id; by mingo's `$sort`
 * otherwise (arrays and embedded documents).
 */
export function sortedDocs(docs: Doc[], sort: Record<string, 1 | -1> | undefined): Doc[] {
  const keys = Object.entries(sort ?? {});
  if (keys.length === 0) return docs;
  const simple = docs.every((doc) =>
    keys.every(([field]) => {
      const value = valueAt(doc, field);
      return value === undefined || isPlain(value) || value instanceof Date || value instanceof ObjectId;
    }),
  );
  if (!simple) return new Aggregator([{ $sort: sort }], {}).run(docs) as Doc[];
  const orders = keys.map(([, order]) => order);
  const decorated = docs.map((doc) => ({ doc, values: keys.map(([field]) => valueAt(doc, field)) }));
  decorated.sort((a, b) => {
    for (let i = 0; i < orders.length; i++) {
      const compared = compareValues(a.values[i], b.values[i]);
      if (compared !== 0) return compared * (orders[i] as number);
    }
    return 0;
  });
  return decorated.map(({ doc }) => doc);
}

/** The string ids an `_id` condition names (an equality, or the operand of its `$in`); `undefined` for any other. */
function namedIds(condition: unknown): string[] | undefined {
  const ids = typeof condition === 'string' ? [condition] : (condition as { $in?: unknown } | undefined)?.$in;
  return Array.isArray(ids) && ids.every((value) => typeof value === 'string') ? ids : undefined;
}

/** Whether an `_id` condition is an equality or a `$in` and nothing else: matching one of its ids satisfies it. */
function isIdsOnly(condition: unknown): boolean {
  return typeof condition === 'string' || Object.keys(condition as object).length === 1;
}

/** The values an equality, `$eq` or `$in` on a field pins it to; `undefined` for any other condition. */
function pointValues(condition: unknown): unknown[] | undefined {
  if (condition === undefined) return undefined;
  if (isPlain(condition)) return [condition];
  if (typeof condition !== 'object' || condition instanceof Date || Array.isArray(condition)) return undefined;
  const keys = Object.keys(condition as object);
  const operand = condition as { $eq?: unknown; $in?: unknown };
  if (keys.length === 1 && keys[0] === '$eq' && isPlain(operand.$eq)) return [operand.$eq];
  if (keys.length === 1 && Array.isArray(operand.$in) && operand.$in.every(isPlain)) return operand.$in;
  return undefined;
}
