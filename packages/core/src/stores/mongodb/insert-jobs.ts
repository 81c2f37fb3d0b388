import type { Collection } from 'mongodb';
import type { InsertOutcome, NewJob } from '../../engine/store.ts';
import { type JobDocument, toJobDocument, toJobRecord } from './documents.ts';
import { bulkWriteErrors, DUPLICATE_KEY } from './errors.ts';
import { IDEMPOTENCY_INDEX } from './indexes.ts';

/** How often a key whose holder vanished (pruned between the conflict and the look-up) is inserted again. */
const MAX_ROUNDS = 5;

function keyOf(name: string, idempotencyKey: string): string {
  return `${name}\u0000${idempotencyKey}`;
}

/**
 * Inserts jobs with one unordered `insertMany`. A job whose `(name,
 * idempotencyKey)` is already taken fails on the unique index; the job that
 * holds the key is looked up and returned with `created: false`. Jobs sharing
 * a key within one batch become one job.
 */
export async function insertJobs(jobs: Collection<JobDocument>, input: readonly NewJob[]): Promise<InsertOutcome[]> {
  const outcomes: (InsertOutcome | undefined)[] = new Array(input.length);
  const firstOfKey = new Map<string, number>();
  const aliases: [index: number, first: number][] = [];
  let pending: number[] = [];
  for (const [index, job] of input.entries()) {
    if (job.idempotencyKey !== null) {
      const key = keyOf(job.name, job.idempotencyKey);
      const first = firstOfKey.get(key);
      if (first !== undefined) {
        aliases.push([index, first]);
        continue;
      }
      firstOfKey.set(key, index);
    }
    pending.push(index);
  }

  for (let round = 0; pending.length > 0; round++) {
    if (round === MAX_ROUNDS) throw new Error('idempotency keys kept conflicting with jobs that then disappeared');
    const docs = pending.map((index) => toJobDocument(input[index] as NewJob));
    const conflicts = await insertReportingConflicts(jobs, docs);
    pending.forEach((index, position) => {
      if (!conflicts.has(position))
        outcomes[index] = { job: toJobRecord(docs[position] as JobDocument), created: true };
    });
    pending = pending.filter((_, position) => conflicts.has(position));
    if (pending.length === 0) break;
    const holders = await findKeyHolders(
      jobs,
      pending.map((index) => input[index] as NewJob),
    );
    pending = pending.filter((index) => {
      const job = input[index] as NewJob;
      const holder = holders.get(keyOf(job.name, job.idempotencyKey as string));
      if (holder) outcomes[index] = { job: toJobRecord(holder), created: false };
      return !holder;
    });
  }

  for (const [index, first] of aliases) {
    const outcome = outcomes[first] as InsertOutcome;
    outcomes[index] = { job: outcome.job, created: false };
  }
  return outcomes as InsertOutcome[];
}

/** Inserts `docs`; resolves to the positions that failed on the idempotency index. Any other failure throws. */
async function insertReportingConflicts(jobs: Collection<JobDocument>, docs: JobDocument[]): Promise<Set<number>> {
  try {
    await jobs.insertMany(docs, { ordered: false });
    return new Set();
  } catch (error) {
    const writeErrors = bulkWriteErrors(error);
    if (!writeErrors || writeErrors.length === 0) throw error;
    const conflicts = new Set<number>();
    for (const writeError of writeErrors) {
      const doc = docs[writeError.index];
      if (writeError.code !== DUPLICATE_KEY || !doc || doc.idempotencyKey === null) throw error;
      conflicts.add(writeError.index);
    }
    return conflicts;
  }
}

/**
 * The jobs holding the keys of `wanted`, through the idempotency index: the
 * query repeats the index's `$type` condition, as the server needs to use a
 * partial index. It asks for every pair of the names and keys wanted, so the
 * index bounds are exact; pairs not wanted are ignored.
 */
async function findKeyHolders(jobs: Collection<JobDocument>, wanted: NewJob[]): Promise<Map<string, JobDocument>> {
  const names = [...new Set(wanted.map((job) => job.name))];
  const keys = [...new Set(wanted.map((job) => job.idempotencyKey as string))];
  const found = await jobs
    .find({ name: { $in: names }, idempotencyKey: { $in: keys, $type: 'string' } }, { hint: IDEMPOTENCY_INDEX })
    .toArray();
  return new Map(found.map((doc) => [keyOf(doc.name, doc.idempotencyKey as string), doc as JobDocument]));
}
