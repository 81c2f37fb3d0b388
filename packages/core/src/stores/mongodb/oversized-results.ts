import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { LeaseRef } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { appendedErrors, type JobDocument, literal, toJson } from './documents.ts';
import { ENDED_LEASE, heldBy } from './leases.ts';

/**
 * The largest result, as JSON text, the store keeps. A job's document is at
 * most 16 MiB (the server's limit; the driver refuses a larger write before
 * sending it, and with it every other write of its batch), and this leaves a
 * mebibyte for the rest of the job. A server's `maxResultBytes` set above it
 * would otherwise let an ack fail on every try, and the job run again.
 */
export const MAX_STORED_RESULT_BYTES = 15 * 1024 * 1024;

/**
 * Ends dead each job of `items` whose result is over
 * `MAX_STORED_RESULT_BYTES`, fenced by its lease, its error naming the limit,
 * and then refuses the whole batch with `PAYLOAD_TOO_LARGE` (nothing else of
 * it applied, so the worker sends the other acks again), as the server does
 * for a result over `maxResultBytes`: retrying would make the same result
 * again. Does nothing when every result fits.
 */
export async function refuseUnstorableResults(
  jobs: Collection<JobDocument>,
  items: readonly (LeaseRef & { result: unknown })[],
  now: Date,
): Promise<void> {
  const oversized = items.flatMap((item) => {
    const bytes = Buffer.byteLength(toJson(item.result) ?? '');
    return bytes > MAX_STORED_RESULT_BYTES ? [{ item, bytes }] : [];
  });
  if (oversized.length === 0) return;
  const writes = oversized.flatMap(({ item, bytes }): AnyBulkWriteOperation<JobDocument>[] => {
    const filter = heldBy(item, now);
    if (!filter) return [];
    const error = {
      message: `The result was ${bytes} bytes, over the ${MAX_STORED_RESULT_BYTES} a MongoDB store keeps (a job's document is at most 16 MiB), so it was not stored and the job was not retried. Store large results elsewhere and return a reference to them.`,
      code: 'PAYLOAD_TOO_LARGE',
      permanent: true,
      at: now,
    };
    const recorded = { $mergeObjects: [literal(error), { attempt: '$attempts' }] };
    const dead = { ...ENDED_LEASE, state: 'dead', error: recorded, errors: appendedErrors(recorded), finishedAt: now };
    return [{ updateOne: { filter, update: [{ $set: { ...dead, updatedAt: now } }] } }];
  });
  if (writes.length > 0) await jobs.bulkWrite(writes, { ordered: false });
  const first = oversized[0] as { item: LeaseRef; bytes: number };
  const more = oversized.length > 1 ? `, and ${oversized.length - 1} more results are over it too` : '';
  throw new WorkqError(
    'PAYLOAD_TOO_LARGE',
    `The result of job ${first.item.id} is ${first.bytes} bytes; a MongoDB store keeps results up to ${MAX_STORED_RESULT_BYTES} bytes${more} (set maxResultBytes below it). Such jobs end dead with that error, their results not stored; no other ack of this batch was applied, so send them again. Store large results elsewhere and return a reference to them.`,
  );
}
