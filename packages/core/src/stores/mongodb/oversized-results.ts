import type { AnyBulkWriteOperation, BulkWriteOptions, Collection } from 'mongodb';
import type { LeaseRef } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { ENDED_LEASE, heldBy } from './leases.ts';
import { appendedErrors, type JobDocument, literal, toJson } from './records.ts';

/**
 * The largest result, as JSON text, the store keeps. A job's document is at
 * most 16 MiB (the server's limit; the driver refuses a larger write before
 * sending it, and with it every other write of its batch), and this leaves a
 * mebibyte for the rest of the job. A server's `maxResultBytes` set above it
 * would otherwise let an ack fail on every try, and the job run again.
 */
export const MAX_STORED_RESULT_BYTES = 15 * 1024 * 1024;

const STORE_ELSEWHERE = 'Store large results elsewhere and return a reference to them.';

/** An ack whose result the store will not keep, and the size of that result as JSON text. */
interface Unstorable {
  item: LeaseRef & { result: unknown };
  bytes: number;
}

function resultBytes(item: { result: unknown }): number {
  return Buffer.byteLength(toJson(item.result) ?? '');
}

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
  limitMs: number,
): Promise<void> {
  const oversized = items.flatMap((item) => {
    const bytes = resultBytes(item);
    return bytes > MAX_STORED_RESULT_BYTES ? [{ item, bytes }] : [];
  });
  if (oversized.length === 0) return;
  await endDead(jobs, oversized, now, `over the ${MAX_STORED_RESULT_BYTES} a MongoDB store keeps`, limitMs);
  throw refusal(
    oversized,
    `a MongoDB store keeps results up to ${MAX_STORED_RESULT_BYTES} bytes`,
    'no other ack of this batch was applied, so send them again (and set maxResultBytes below that limit)',
  );
}

/**
 * For acks whose update the server refused because the job's document, its
 * payload and the result together, would be over 16 MiB (17419; see
 * `DocumentsTooLarge`): ends each such job dead, fenced by its lease, its
 * error saying why, and refuses the batch with `PAYLOAD_TOO_LARGE`, as for a
 * result over `MAX_STORED_RESULT_BYTES`: the same result would fail the
 * same way on every try, and the job would run again. The batch's other
 * acks were applied; sent again, each is answered as a repeat.
 */
export async function refuseOverfullJobs(
  jobs: Collection<JobDocument>,
  refused: readonly (LeaseRef & { result: unknown })[],
  now: Date,
  limitMs: number,
): Promise<never> {
  const overfull = refused.map((item) => ({ item, bytes: resultBytes(item) }));
  await endDead(
    jobs,
    overfull,
    now,
    "too large to go with the job's payload into the 16 MiB a MongoDB job's document holds",
    limitMs,
  );
  throw refusal(
    overfull,
    "with its payload, that is over the 16 MiB a MongoDB job's document holds",
    'the other acks of this batch were applied',
  );
}

/** Ends each job of `ended` dead, fenced by its lease, with a permanent `PAYLOAD_TOO_LARGE` error saying `why`. */
async function endDead(
  jobs: Collection<JobDocument>,
  ended: readonly Unstorable[],
  now: Date,
  why: string,
  limitMs: number,
): Promise<void> {
  const writes = ended.flatMap(({ item, bytes }): AnyBulkWriteOperation<JobDocument>[] => {
    const filter = heldBy(item, now);
    if (!filter) return [];
    const error = {
      message: `The result was ${bytes} bytes, ${why}, so it was not stored and the job was not retried. ${STORE_ELSEWHERE}`,
      code: 'PAYLOAD_TOO_LARGE',
      permanent: true,
      at: now,
    };
    const recorded = { $mergeObjects: [literal(error), { attempt: '$attempts' }] };
    const dead = { ...ENDED_LEASE, state: 'dead', error: recorded, errors: appendedErrors(recorded), finishedAt: now };
    return [{ updateOne: { filter, update: [{ $set: { ...dead, updatedAt: now } }] } }];
  });
  if (writes.length === 0) return;
  await withCallLimit(limitMs, (signal) => {
    const options: Abortable<BulkWriteOptions> = { ordered: false, signal };
    return jobs.bulkWrite(writes, options);
  });
}

/** The `PAYLOAD_TOO_LARGE` a worker hears for `ended`, naming the first of them, the `limit` and what of the batch was `applied`. */
function refusal(ended: readonly Unstorable[], limit: string, applied: string): WorkqError {
  const first = ended[0] as Unstorable;
  const more = ended.length > 1 ? `, and ${ended.length - 1} more results are too` : '';
  return new WorkqError(
    'PAYLOAD_TOO_LARGE',
    `The result of job ${first.item.id} is ${first.bytes} bytes; ${limit}${more}. Such jobs end dead with that error, their results not stored; ${applied}. ${STORE_ELSEWHERE}`,
  );
}
