import { WorkqError } from '../errors.ts';
import type { InsertOutcome, KeyHolderGone, NewJob, Store } from './store.ts';

/** An insert's outcome for a job the store inserted, or found the retained holder of its key for. */
export type Inserted = Exclude<InsertOutcome, KeyHolderGone>;

/**
 * How many times a job is inserted (or moved into) while the job holding its idempotency key keeps
 * vanishing mid-insert (`KeyHolderGone`) before the call fails.
 */
export const KEY_HOLDER_TRIES = 3;

/** The retryable failure of a job whose key holder vanished `KEY_HOLDER_TRIES` times. */
export function keyHolderGone(what: string): WorkqError {
  return new WorkqError(
    'UNAVAILABLE',
    `The idempotency key of ${what} kept changing hands (the jobs holding it were pruned as it was used); nothing was enqueued for it. Try again.`,
    { retryable: true },
  );
}

/**
 * Inserts `jobs` on `store`, each `(name, idempotency key)` once: a job repeating the key of an earlier one
 * in the batch is not sent, and gets that one's job with `created: false` (the first one wins). Outcomes are
 * in input order.
 */
export async function insertDistinct(store: Store, jobs: readonly NewJob[]): Promise<Inserted[]> {
  const firstOfKey = new Map<string, number>();
  const distinct: NewJob[] = [];
  /** For each job, the position in `distinct` of the job sent for it. */
  const sentAs = jobs.map((job) => {
    if (job.idempotencyKey === null) return distinct.push(job) - 1;
    const ref = JSON.stringify([job.name, job.idempotencyKey]);
    const first = firstOfKey.get(ref) ?? distinct.push(job) - 1;
    firstOfKey.set(ref, first);
    return first;
  });
  const outcomes = await insertRetrying(store, distinct);
  if (distinct.length === jobs.length) return outcomes;
  return jobs.map((job, i) => {
    const at = sentAs[i] as number;
    const outcome = outcomes[at] as Inserted;
    return distinct[at] === job ? outcome : { job: outcome.job, created: false };
  });
}

/**
 * Inserts jobs with distinct keys; those whose key holder vanished mid-insert are sent again, up to
 * `KEY_HOLDER_TRIES` times in all, then the call fails with a retryable `UNAVAILABLE`.
 */
async function insertRetrying(store: Store, jobs: readonly NewJob[]): Promise<Inserted[]> {
  const outcomes = await store.insertJobs(jobs);
  for (let tries = 1; ; tries++) {
    const gone = jobs.flatMap((_, i) => (outcomes[i]?.job === null ? [i] : []));
    if (gone.length === 0) return outcomes as Inserted[];
    if (tries >= KEY_HOLDER_TRIES) throw keyHolderGone(`job ${jobs[gone[0] as number]?.id}`);
    const again = await store.insertJobs(gone.map((i) => jobs[i] as NewJob));
    for (const [k, i] of gone.entries()) outcomes[i] = again[k] as InsertOutcome;
  }
}
