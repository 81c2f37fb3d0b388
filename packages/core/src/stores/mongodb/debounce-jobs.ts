import type { Collection, FindOneAndUpdateOptions, InsertOneOptions, UpdateOptions } from 'mongodb';
import type { InsertOutcome, NewJob } from '../../engine/store.ts';
import { NOT_STARTED, notStartedState } from '../shared/not-started.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { isDuplicateKeyError } from './errors.ts';
import { DEBOUNCE_INDEX, DEBOUNCE_INDEX_KEY } from './indexes.ts';
import {
  cleanBackoff,
  type JobDocument,
  literal,
  orderKeyExpression,
  toJobDocument,
  toJobRecord,
  toJson,
  ttlMarker,
} from './records.ts';

/**
 * `Store.debounceJobs`: one job at a time, each atomic on its own (a batch rarely debounces more than one
 * key). Each call to the server is abandoned after `limitMs` (see `withCallLimit`).
 */
export async function debounceJobs(
  jobs: Collection<JobDocument>,
  input: readonly NewJob[],
  limitMs: number,
): Promise<InsertOutcome[]> {
  const outcomes: InsertOutcome[] = [];
  for (const job of input) outcomes.push(await debounceJob(jobs, job, limitMs));
  return outcomes;
}

/**
 * What a debounce sets on a holder that waits, by `job`'s mode (see `Store.debounceJobs`): its payload,
 * settings and run time (`replace`), its payload and settings (`preserveRunAt`), or nothing (`keepFirst`, which
 * sets the key to itself, so the holder is still found and answered by one write a majority acknowledges).
 */
function debounceChanges(job: NewJob): Record<string, unknown> {
  const mode = job.debounceMode ?? 'replace';
  if (mode === 'keepFirst') return { debounceKey: '$debounceKey' };
  const changes: Record<string, unknown> = {
    payload: literal(toJson(job.payload)),
    version: literal(job.version),
    priority: literal(job.priority),
    maxAttempts: literal(job.maxAttempts),
    backoff: literal(cleanBackoff(job.backoff)),
    leaseMs: literal(job.leaseMs),
    // The holder takes the new job's retention too: none (`null`) when it has none.
    retainCompletedMs: literal(job.retainCompletedMs ?? null),
    retainDeadMs: literal(job.retainDeadMs ?? null),
    // …and with it the TTL index's marker: with a retention of its own, the pruner alone deletes it.
    ttl: literal(ttlMarker(job) ? true : null),
    timeoutMs: literal(job.timeoutMs ?? null),
    updatedAt: literal(job.createdAt),
  };
  if (mode === 'preserveRunAt') return changes;
  return {
    ...changes,
    runAt: literal(job.runAt),
    orderKey: orderKeyExpression(job.runAt),
    state: literal(notStartedState(job.runAt, job.createdAt)),
  };
}

/**
 * The holder of `job`'s debounce key is changed as its mode says (`debounceChanges`) in one `findOneAndUpdate`
 * while it waits, never started (a claim's `findOneAndUpdate` of the same document is atomic with it: one of them sees the
 * other's result). With none waiting, the job is inserted; the unique index refuses it when a job that
 * started or finished holds the key, which that job then lets go of, and the engine sends the job again.
 * The query repeats the index's `$type` condition, as the server needs to use a partial index.
 * The holder it answers with comes from that write, which a majority acknowledged before the answer (no
 * plain read tells a resend the job exists: see `findKeyHolders` for why that must be a majority's).
 */
async function debounceJob(jobs: Collection<JobDocument>, job: NewJob, limitMs: number): Promise<InsertOutcome> {
  const holder = { name: job.name, debounceKey: { $eq: job.debounceKey, $type: 'string' as const } };
  const updated = await withCallLimit(limitMs, (signal) => {
    const options: Abortable<FindOneAndUpdateOptions> = { returnDocument: 'after', hint: DEBOUNCE_INDEX_KEY, signal };
    return jobs.findOneAndUpdate(
      { ...holder, state: { $in: [...NOT_STARTED] }, attempts: 0 },
      [{ $set: debounceChanges(job) }],
      options,
    );
  });
  if (updated) return { job: toJobRecord(updated as JobDocument), created: false };
  const doc = toJobDocument(job);
  try {
    await withCallLimit(limitMs, (signal) => {
      const options: Abortable<InsertOneOptions> = { signal };
      return jobs.insertOne(doc, options);
    });
    return { job: toJobRecord(doc), created: true };
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
  }
  // Taken by a job that started or finished, or by one a concurrent debounce inserted (left as it is).
  await withCallLimit(limitMs, (signal) => {
    const options: Abortable<UpdateOptions> = { hint: DEBOUNCE_INDEX, signal };
    return jobs.updateOne(
      { ...holder, $or: [{ state: { $nin: [...NOT_STARTED] } }, { attempts: { $gt: 0 } }] },
      { $set: { debounceKey: null } },
      options,
    );
  });
  return { job: null, created: false };
}
