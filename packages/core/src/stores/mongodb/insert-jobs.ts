import type { BulkWriteOptions, Collection, UpdateOptions } from 'mongodb';
import type { InsertOutcome, NewJob } from '../../engine/store.ts';
import { keyExpired } from '../shared/deduplication.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { bulkWriteErrors, DUPLICATE_KEY } from './errors.ts';
import { IDEMPOTENCY_INDEX } from './indexes.ts';
import { keyLetGo } from './key-let-go.ts';
import { type JobDocument, toJobDocument, toJobRecord } from './records.ts';

function keyOf(name: string, idempotencyKey: string): string {
  return `${name}\u0000${idempotencyKey}`;
}

/**
 * Inserts jobs (no two sharing a key, see `Store.insertJobs`) with one unordered `insertMany`. A job whose id
 * or `(name, idempotencyKey)` is already taken fails on that unique index; the job that holds the id, else the
 * one that holds the key, is looked up and returned with `created: false`, or `KeyHolderGone` when it was
 * pruned before the look-up. Each call to the server is abandoned after `limitMs` (see `withCallLimit`).
 */
export async function insertJobs(
  jobs: Collection<JobDocument>,
  input: readonly NewJob[],
  limitMs: number,
): Promise<InsertOutcome[]> {
  const docs = input.map(toJobDocument);
  const conflicts = await insertReportingConflicts(jobs, docs, limitMs);
  if (conflicts.size === 0) return docs.map((doc) => ({ job: toJobRecord(doc), created: true }));
  const onId = [...conflicts].flatMap(([position, index]) => (index === 'id' ? [input[position] as NewJob] : []));
  const onKey = [...conflicts].flatMap(([position, index]) => (index === 'key' ? [input[position] as NewJob] : []));
  const idHolders =
    onId.length === 0 ? new Map() : await withCallLimit(limitMs, (signal) => findIdHolders(jobs, onId, signal));
  const holders =
    onKey.length === 0 ? new Map() : await withCallLimit(limitMs, (signal) => findKeyHolders(jobs, onKey, signal));
  const expired: NewJob[] = [];
  const outcomes = input.map((job, position): InsertOutcome => {
    if (!conflicts.has(position)) return { job: toJobRecord(docs[position] as JobDocument), created: true };
    if (conflicts.get(position) === 'id') {
      const idHolder = idHolders.get(job.id);
      // No holder: it was pruned before the look-up (see `KeyHolderGone`).
      return idHolder ? { job: toJobRecord(idHolder), created: false } : { job: null, created: false };
    }
    const holder = holders.get(keyOf(job.name, job.idempotencyKey as string));
    // No holder: it was pruned before the look-up; an expired one lets go of its key (see `KeyHolderGone`).
    if (!holder) return { job: null, created: false };
    const record = toJobRecord(holder);
    if (!keyExpired(record, job)) return { job: record, created: false };
    expired.push(job);
    return { job: null, created: false };
  });
  for (const job of expired) {
    await withCallLimit(limitMs, (signal) => {
      const options: Abortable<UpdateOptions> = { hint: IDEMPOTENCY_INDEX, signal };
      return jobs.updateOne(
        { name: job.name, idempotencyKey: { $eq: job.idempotencyKey, $type: 'string' }, ...keyLetGo(job.createdAt) },
        { $set: { idempotencyKey: null } },
        options,
      );
    });
  }
  return outcomes;
}

/** The unique index an insert found taken: the id's (`_id_`), or the idempotency key's. */
type TakenIndex = 'id' | 'key';

/**
 * Inserts `docs`; resolves to the positions that failed on a unique index, each with the index: the id's when
 * the server names `_id_` (as every server and the wire double do) or the document has no key to conflict on.
 * Any other failure throws.
 */
async function insertReportingConflicts(
  jobs: Collection<JobDocument>,
  docs: JobDocument[],
  limitMs: number,
): Promise<Map<number, TakenIndex>> {
  try {
    await withCallLimit(limitMs, (signal) => {
      const options: Abortable<BulkWriteOptions> = { ordered: false, signal };
      return jobs.insertMany(docs, options);
    });
    return new Map();
  } catch (error) {
    const writeErrors = bulkWriteErrors(error);
    if (!writeErrors || writeErrors.length === 0) throw error;
    const conflicts = new Map<number, TakenIndex>();
    for (const writeError of writeErrors) {
      const doc = docs[writeError.index];
      if (writeError.code !== DUPLICATE_KEY || !doc) throw error;
      const onId = doc.idempotencyKey === null || / index: _id_\b/.test(writeError.errmsg ?? '');
      conflicts.set(writeError.index, onId ? 'id' : 'key');
    }
    return conflicts;
  }
}

/** The jobs holding the ids of `wanted`, read at `majority` for the reason `findKeyHolders` gives. */
async function findIdHolders(
  jobs: Collection<JobDocument>,
  wanted: NewJob[],
  signal: AbortSignal,
): Promise<Map<string, JobDocument>> {
  const found = await jobs
    .find({ _id: { $in: wanted.map((job) => job.id) } }, { readConcern: { level: 'majority' }, signal })
    .toArray();
  return new Map(found.map((doc) => [doc._id, doc as JobDocument]));
}

/**
 * The jobs holding the keys of `wanted`, through the idempotency index: the
 * query repeats the index's `$type` condition, as the server needs to use a
 * partial index. It asks for every pair of the names and keys wanted, so the
 * index bounds are exact; pairs not wanted are ignored.
 *
 * Read at `majority`: a holder is the answer "your job is stored", so it must
 * be one a failover keeps. The holder may be the caller's own earlier insert,
 * applied on the primary but not yet acknowledged by a majority (the caller
 * was told `TIMEOUT` and sent it again); at `local` the resend would be told
 * it exists, and a failover could then roll it back, losing a job its client
 * was told is stored. A holder no majority has yet is not found: the job gets
 * `KeyHolderGone`, which the engine answers by sending it again a few times,
 * then with a retryable `UNAVAILABLE`.
 */
async function findKeyHolders(
  jobs: Collection<JobDocument>,
  wanted: NewJob[],
  signal: AbortSignal,
): Promise<Map<string, JobDocument>> {
  const names = [...new Set(wanted.map((job) => job.name))];
  const keys = [...new Set(wanted.map((job) => job.idempotencyKey as string))];
  const found = await jobs
    .find(
      { name: { $in: names }, idempotencyKey: { $in: keys, $type: 'string' } },
      { hint: IDEMPOTENCY_INDEX, readConcern: { level: 'majority' }, signal },
    )
    .toArray();
  return new Map(found.map((doc) => [keyOf(doc.name, doc.idempotencyKey as string), doc as JobDocument]));
}
