import type { Collection } from 'mongodb';
import type { SchemaEntry, WorkerPresence, WorkerRoom } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { isDuplicateKeyError } from './errors.ts';
import { fromJson, type SchemaDocument, stringOrNull, toJson, type WorkerDocument } from './records.ts';

/** Inserts the schema unless `(name, version)` is taken (unique index), then resolves to the stored entry. */
export async function registerSchema(schemas: Collection<SchemaDocument>, entry: SchemaEntry): Promise<SchemaEntry> {
  const key = { name: String(entry.name), version: Number(entry.version) };
  try {
    await schemas.insertOne({
      ...key,
      fingerprint: String(entry.fingerprint),
      jsonSchema: toJson(entry.jsonSchema),
      registeredAt: entry.registeredAt,
    });
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
  }
  const stored = await schemas.findOne(key);
  if (!stored) throw new WorkqError('UNAVAILABLE', `The schema of ${key.name} v${key.version} could not be read back.`);
  return toSchemaEntry(stored);
}

/** Registered schemas, of one job name or all, by name then version. */
export async function listSchemas(schemas: Collection<SchemaDocument>, name?: string): Promise<SchemaEntry[]> {
  const filter = name === undefined ? {} : { name: stringOrNull(name) ?? { $in: [] } };
  const docs = await schemas.find(filter, { sort: { name: 1, version: 1 } }).toArray();
  return docs.map(toSchemaEntry);
}

/** Deletes the schema of one (name, version) by its unique key; resolves to whether there was one. */
export async function removeSchema(
  schemas: Collection<SchemaDocument>,
  name: string,
  version: number,
): Promise<boolean> {
  const { deletedCount } = await schemas.deleteOne({ name: String(name), version: Number(version) });
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
): Promise<boolean> {
  const id = stringOrNull(worker.id);
  if (id === null) throw new WorkqError('VALIDATION', 'A worker id must be a string.');
  const { minVersion, maxVersion, seenAt, pid, startedAt } = worker;
  const presence = {
    $set: { host: String(worker.host), name: String(worker.name), minVersion, maxVersion, seenAt, pid, startedAt },
  };
  if ((await workers.updateOne({ _id: id }, presence)).matchedCount > 0) return true;
  const held = await workers.find({}, { projection: { _id: 1 }, limit: room.maxWorkers }).toArray();
  if (held.length >= room.maxWorkers) {
    const [idlest] = await workers
      .find({ seenAt: { $lt: room.idleBefore } }, { sort: { seenAt: 1 }, limit: 1, projection: { _id: 1, seenAt: 1 } })
      .toArray();
    if (!idlest) return false;
    // Still that idle: a worker seen meanwhile keeps its place.
    const { deletedCount } = await workers.deleteOne({ _id: idlest._id, seenAt: idlest.seenAt });
    if (deletedCount === 0) return false;
  }
  await workers.updateOne({ _id: id }, presence, { upsert: true });
  return true;
}

/** Deletes the consumers last seen before `seenBefore`. */
export async function pruneWorkers(workers: Collection<WorkerDocument>, seenBefore: Date): Promise<number> {
  return (await workers.deleteMany({ seenAt: { $lt: seenBefore } })).deletedCount;
}

/** Marks the consumers with these ids seen at `seenAt`, unless seen later already; inserts nothing. */
export async function touchWorkers(
  workers: Collection<WorkerDocument>,
  ids: readonly string[],
  seenAt: Date,
): Promise<void> {
  const known = ids.filter((id) => typeof id === 'string');
  if (known.length === 0) return;
  await workers.updateMany({ _id: { $in: known }, seenAt: { $lt: seenAt } }, { $set: { seenAt } });
}

/** Consumers seen at or after `seenSince`, by id. */
export async function listWorkers(workers: Collection<WorkerDocument>, seenSince: Date): Promise<WorkerPresence[]> {
  const docs = await workers.find({ seenAt: { $gte: seenSince } }, { sort: { _id: 1 } }).toArray();
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
