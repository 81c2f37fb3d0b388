import { randomUUID } from 'node:crypto';
import type { AnyBulkWriteOperation, Collection, UpdateFilter } from 'mongodb';
import type { LeaseRef } from '../../engine/store.ts';
import type { JobDocument } from './documents.ts';
import { heldBy } from './leases.ts';

/**
 * The field a batch of fenced updates marks each job it changed with: a random id of the batch, by which
 * the jobs it changed are read back when some of its writes matched nothing. Only batches write it.
 */
const BATCH_MARK = 'heldUpdateBatch';

/**
 * Applies `update` to each job its lease still holds at `now`, as one
 * unordered `bulkWrite` of fenced `updateOne`s: one round trip a batch, not
 * one per job side by side (a 1,000-ack batch would take the connection
 * pool), retried whole by the driver after a failover, each write applied
 * once. When every write changed its job, resolves to all their ids; else
 * to the ids of the jobs carrying this batch's mark (`BATCH_MARK`).
 */
export async function updateEachHeld<L extends LeaseRef>(
  jobs: Collection<JobDocument>,
  leases: readonly L[],
  now: Date,
  update: (lease: L) => { $set: Partial<JobDocument>; $inc?: Partial<Record<keyof JobDocument, number>> },
): Promise<string[]> {
  const fenced = leases.flatMap((lease) => {
    const filter = heldBy(lease, now);
    return filter ? [{ lease, filter }] : [];
  });
  if (fenced.length === 0) return [];
  const batch = randomUUID();
  const writes = fenced.map(({ lease, filter }): AnyBulkWriteOperation<JobDocument> => {
    const { $set, ...rest } = update(lease);
    const marked = { ...rest, $set: { ...$set, [BATCH_MARK]: batch } } as UpdateFilter<JobDocument>;
    return { updateOne: { filter, update: marked } };
  });
  const { modifiedCount } = await jobs.bulkWrite(writes, { ordered: false });
  if (modifiedCount === fenced.length) return fenced.map(({ lease }) => lease.id);
  const ids = fenced.map(({ lease }) => lease.id);
  const changed = await jobs.find({ _id: { $in: ids }, [BATCH_MARK]: batch }, { projection: { _id: 1 } }).toArray();
  return changed.map((doc) => doc._id);
}
