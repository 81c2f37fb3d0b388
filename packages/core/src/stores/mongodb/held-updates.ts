import { randomUUID } from 'node:crypto';
import {
  type AnyBulkWriteOperation,
  type BulkWriteOptions,
  type Collection,
  type Filter,
  MongoBulkWriteError,
  type UpdateFilter,
} from 'mongodb';
import type { LeaseRef } from '../../engine/store.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { heldBy } from './leases.ts';
import type { JobDocument } from './records.ts';

/**
 * The field a batch of fenced updates marks each job it changed with: a random id of the batch, by which
 * the jobs it changed are read back when some of its writes matched nothing. Only batches write it.
 */
const BATCH_MARK = 'heldUpdateBatch';

/**
 * Applies `update` to each job its lease still holds at `now` (and that matches `also`), as one
 * unordered `bulkWrite` of fenced `updateOne`s: one round trip a batch, not
 * one per job side by side (a 1,000-ack batch would take the connection
 * pool), retried whole by the driver after a failover, each write applied
 * once. When every write changed its job, resolves to all their ids; else
 * to the ids of the jobs carrying this batch's mark (`BATCH_MARK`). Rejects
 * with `DocumentsTooLarge` when the only writes the server refused are ones
 * that would make a document over 16 MiB.
 */
export async function updateEachHeld<L extends LeaseRef>(
  jobs: Collection<JobDocument>,
  leases: readonly L[],
  now: Date,
  update: (lease: L) => { $set: Partial<JobDocument>; $inc?: Partial<Record<keyof JobDocument, number>> },
  limitMs: number,
  also: Filter<JobDocument> = {},
): Promise<string[]> {
  const fenced = leases.flatMap((lease) => {
    const filter = heldBy(lease, now);
    return filter ? [{ lease, filter: { ...filter, ...also } }] : [];
  });
  if (fenced.length === 0) return [];
  const batch = randomUUID();
  const writes = fenced.map(({ lease, filter }): AnyBulkWriteOperation<JobDocument> => {
    const { $set, ...rest } = update(lease);
    const marked = { ...rest, $set: { ...$set, [BATCH_MARK]: batch } } as UpdateFilter<JobDocument>;
    return { updateOne: { filter, update: marked } };
  });
  let modifiedCount: number;
  try {
    ({ modifiedCount } = await withCallLimit(limitMs, (signal) => {
      const options: Abortable<BulkWriteOptions> = { ordered: false, signal };
      return jobs.bulkWrite(writes, options);
    }));
  } catch (error) {
    throw tooLarge(error, fenced) ?? error;
  }
  if (modifiedCount === fenced.length) return fenced.map(({ lease }) => lease.id);
  const ids = fenced.map(({ lease }) => lease.id);
  const changed = await withCallLimit(limitMs, (signal) =>
    jobs.find({ _id: { $in: ids }, [BATCH_MARK]: batch }, { projection: { _id: 1 }, signal }).toArray(),
  );
  return changed.map((doc) => doc._id);
}

/**
 * The codes a write that would make a document over 16 MiB fails with: 17419
 * (the server's update stage), 17420 (an upsert's new document), 10334
 * (BSONObjectTooLarge, which later servers answer instead of 17419).
 */
const DOCUMENT_TOO_LARGE = new Set([17419, 17420, 10334]);

/**
 * The writes of an `updateEachHeld` batch the server refused because each
 * would make its job's document over 16 MiB: the leases they were for. Every
 * other write of the batch was applied (or matched nothing).
 */
export class DocumentsTooLarge<L extends LeaseRef> extends Error {
  constructor(
    readonly leases: L[],
    options: { cause: unknown },
  ) {
    super(`${leases.length} fenced updates would make documents over 16 MiB`, options);
    this.name = 'DocumentsTooLarge';
  }
}

/** `error` as `DocumentsTooLarge` when it is a bulk write whose every write error is a document over 16 MiB. */
function tooLarge<L extends LeaseRef>(error: unknown, fenced: readonly { lease: L }[]): DocumentsTooLarge<L> | null {
  if (!(error instanceof MongoBulkWriteError) || (error.err ?? error.writeConcernError) !== undefined) return null;
  const failed = [error.writeErrors].flat();
  if (failed.length === 0 || !failed.every((failure) => DOCUMENT_TOO_LARGE.has(Number(failure.code)))) return null;
  const leases = failed.flatMap((failure) => fenced[failure.index]?.lease ?? []);
  return new DocumentsTooLarge(leases, { cause: error });
}
