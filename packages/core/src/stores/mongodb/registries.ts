import type { Collection, DeleteOptions, InsertOneOptions, UpdateOptions } from 'mongodb';
import type { SchemaEntry, WorkerPresence, WorkerRoom } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { isDuplicateKeyError } from './errors.ts';
import { fromJson, type SchemaDocument, stringOrNull, toJson, type WorkerDocument } from './records.ts';

/** Inserts the schema unless `(name, version)` is taken (unique index), then resolves to the stored entry. */
export async function registerSchema(
  schemas: Collection<SchemaDocument>,
  entry: SchemaEntry,
  limitMs: number,
): Promise<SchemaEntry> {
  const key = { name: String(entry.name), version: Number(entry.version) };
  try {
    const doc = {
      ...key,
      fingerprint: String(entry.fingerprint),
      jsonSchema: toJson(entry.jsonSchema),
      registeredAt: entry.registeredAt,
    };
    await withCallLimit(limitMs, (signal) => {
      const options: Abortable<InsertOneOptions> = { signal };
      return schemas.insertOne(doc, options);
    });
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
  }
  const stored = await withCallLimit(limitMs, (signal) => schemas.findOne(key, { signal }));
  if (!stored) throw new WorkqError('UNAVAILABLE', `The schema of ${key.name} v${key.version} could not be read back.`);
  return toSchemaEntry(stored);
}

/** Registered schemas, of one job name or all, by name then version. */
export async function listSchemas(
  schemas: Collection<SchemaDocument>,
  name: string | undefined,
  limitMs: number,
): Promise<SchemaEntry[]> {
  const filter = name === undefined ? {} : { name: stringOrNull(name) ?? { $in: [] } };
  const docs = await withCallLimit(limitMs, (signal) =>
    schemas.find(filter, { sort: { name: 1, version: 1 }, signal }).toArray(),
  );
  return docs.map(toSchemaEntry);
}

/** Deletes the schema of one (name, version) by its unique key; resolves to whether there was one. */
export async function removeSchema(
  schemas: Collection<SchemaDocument>,
  name: string,
  version: number,
  limitMs: number,
): Promise<boolean> {
  const { deletedCount } = await withCallLimit(limitMs, (signal) => {
    const options: Abortable<DeleteOptions> = { signal };
    return schemas.deleteOne({ name: String(name), version: Number(version) }, options);
  });
  return deletedCount > 0;
}

/**
 * Records one consumer's presence (see `Store.recordWorker`): an update of a known id; else an upsert, while
 * the collection has room or once the document seen longest ago, and before `room.idleBefore`, is deleted
 * for it (the `seen_at` index finds it).
 */
export async function recordWorker(
  workers: Collection<WorkerDocument>,
  worker: WorkerPresence,
  room: WorkerRoom,
  limitMs: number,
): Promise<boolean> {
  const id = stringOrNull(worker.id);
  if (id === null) throw new WorkqError('VALIDATION', 'A worker id must be a string.');
  const { minVersion, maxVersion, seenAt, pid, startedAt } = worker;
  const presence = {
    $set: { host: String(worker.host), name: String(worker.name), minVersion, maxVersion, seenAt, pid, startedAt },
  };
  const upsert = (upsert: boolean) =>
    withCallLimit(limitMs, (signal) => {
      const options: Abortable<UpdateOptions> = { upsert, signal };
      return workers.updateOne({ _id: id }, presence, options);
    });
  if ((await upsert(false)).matchedCount > 0) return true;
  const held = await withCallLimit(limitMs, (signal) =>
    workers.find({}, { projection: { _id: 1 }, limit: room.maxWorkers, signal }).toArray(),
  );
  if (held.length >= room.maxWorkers) {
    const idle = { seenAt: { $lt: room.idleBefore } };
    const [idlest] = await withCallLimit(limitMs, (signal) =>
      workers.find(idle, { sort: { seenAt: 1 }, limit: 1, projection: { _id: 1, seenAt: 1 }, signal }).toArray(),
    );
    if (!idlest) return false;
    // Still that idle: a worker seen meanwhile keeps its place.
    const { deletedCount } = await withCallLimit(limitMs, (signal) => {
      const options: Abortable<DeleteOptions> = { signal };
      return workers.deleteOne({ _id: idlest._id, seenAt: idlest.seenAt }, options);
    });
    if (deletedCount === 0) return false;
  }
  await upsert(true);
  return true;
}

/** Deletes the consumers last seen before `seenBefore`. */
export async function pruneWorkers(
  workers: Collection<WorkerDocument>,
  seenBefore: Date,
  limitMs: number,
): Promise<number> {
  const { deletedCount } = await withCallLimit(limitMs, (signal) => {
    const options: Abortable<DeleteOptions> = { signal };
    return workers.deleteMany({ seenAt: { $lt: seenBefore } }, options);
  });
  return deletedCount;
}

/** Marks the consumers with these ids seen at `seenAt`, unless seen later already; inserts nothing. */
export async function touchWorkers(
  workers: Collection<WorkerDocument>,
  ids: readonly string[],
  seenAt: Date,
  limitMs: number,
): Promise<void> {
  const known = ids.filter((id) => typeof id === 'string');
  if (known.length === 0) return;
  await withCallLimit(limitMs, (signal) => {
    const options: Abortable<UpdateOptions> = { signal };
    return workers.updateMany({ _id: { $in: known }, seenAt: { $lt: seenAt } }, { $set: { seenAt } }, options);
  });
}

/** Consumers seen at or after `seenSince`, by id. */
export async function listWorkers(
  workers: Collection<WorkerDocument>,
  seenSince: Date,
  limitMs: number,
): Promise<WorkerPresence[]> {
  const docs = await withCallLimit(limitMs, (signal) =>
    workers.find({ seenAt: { $gte: seenSince } }, { sort: { _id: 1 }, signal }).toArray(),
  );
  return docs.map(({ _id, host, name, minVersion, maxVersion, seenAt, pid, startedAt }) => ({
    id: _id,
    host,
    name,
    minVersion,
    maxVersion,
    pid: pid ?? null,
    startedAt: startedAt ?? null,
    seenAt,
  }));
}

function toSchemaEntry(doc: SchemaDocument): SchemaEntry {
  const { name, version, fingerprint, jsonSchema, registeredAt } = doc;
  return { name, version, fingerprint, jsonSchema: fromJson(jsonSchema), registeredAt };
}
