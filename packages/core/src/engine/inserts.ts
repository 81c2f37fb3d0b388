import { WorkqError } from '../errors.ts';
import type { InsertOutcome, JobStore, KeyHolderGone, NewJob } from './store.ts';

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
    `The idempotency or debounce key of ${what} kept changing hands (the jobs holding it were pruned, expired or started as it was used); nothing was enqueued for it. Try again.`,
    { retryable: true },
  );
}

/**
 * Inserts `jobs` on `store`, each `(name, idempotency key)` and each `(name, debounce key)` once. A job
 * repeating the idempotency key of an earlier one in the batch is not sent, and gets that one's job with
 * `created: false` (the first one wins). Debounced jobs of one key are one job too, as if enqueued one after
 * the other: the last one's payload and options are sent (`Store.debounceJobs`), the first one reports
 * whether the job was created, and the later ones get it with `created: false`. Outcomes are in input order.
 */
export async function insertDistinct(store: JobStore, jobs: readonly NewJob[]): Promise<Inserted[]> {
  const slotOf = new Map<string, number>();
  const distinct: NewJob[] = [];
  let debounced = 0;
  /** For each job, the position in `distinct` of the job sent for it. */
  const sentAs = jobs.map((job) => {
    if (job.idempotencyKey === null && job.debounceKey === null) return distinct.push(job) - 1;
    const debounce = job.debounceKey !== null;
    const ref = JSON.stringify([debounce ? 'debounce' : 'key', job.name, job.debounceKey ?? job.idempotencyKey]);
    const slot = slotOf.get(ref);
    if (slot === undefined) {
      if (debounce) debounced += 1;
      const at = distinct.push(job) - 1;
      slotOf.set(ref, at);
      return at;
    }
    // A later debounce of a key replaces the earlier one's payload, as a later enqueue would.
    if (debounce) distinct[slot] = job;
    return slot;
  });
  const outcomes =
    debounced === 0
      ? await insertRetrying(distinct, (some) => store.insertJobs(some))
      : await insertSplit(store, distinct, debounced);
  if (distinct.length === jobs.length) return outcomes;
  const reported = new Set<number>();
  return jobs.map((_, i) => {
    const at = sentAs[i] as number;
    const outcome = outcomes[at] as Inserted;
    if (reported.has(at)) return { job: outcome.job, created: false };
    reported.add(at);
    return outcome;
  });
}

/** Sends the debounced jobs of a batch to `debounceJobs` and the others to `insertJobs`; outcomes in input order. */
async function insertSplit(store: JobStore, jobs: readonly NewJob[], debounced: number): Promise<Inserted[]> {
  const plain = jobs.filter((job) => job.debounceKey === null);
  const toDebounce = jobs.filter((job) => job.debounceKey !== null);
  const [inserted, debounces] = await Promise.all([
    plain.length === 0 ? [] : insertRetrying(plain, (some) => store.insertJobs(some)),
    insertRetrying(toDebounce, (some) => store.debounceJobs(some)),
  ]);
  if (debounces.length !== debounced) throw new WorkqError('UNAVAILABLE', 'The store answered for too few jobs.');
  let [p, d] = [0, 0];
  return jobs.map((job) => (job.debounceKey === null ? inserted[p++] : debounces[d++]) as Inserted);
}

/**
 * Inserts jobs with distinct keys through `send`; those whose key holder vanished or let go of the key
 * mid-insert are sent again, up to `KEY_HOLDER_TRIES` times in all, then the call fails with a retryable
 * `UNAVAILABLE`.
 */
async function insertRetrying(
  jobs: readonly NewJob[],
  send: (jobs: readonly NewJob[]) => Promise<InsertOutcome[]>,
): Promise<Inserted[]> {
  const outcomes = await send(jobs);
  for (let tries = 1; ; tries++) {
    const gone = jobs.flatMap((_, i) => (outcomes[i]?.job === null ? [i] : []));
    if (gone.length === 0) return outcomes as Inserted[];
    if (tries >= KEY_HOLDER_TRIES) throw keyHolderGone(`job ${jobs[gone[0] as number]?.id}`);
    const again = await send(gone.map((i) => jobs[i] as NewJob));
    for (const [k, i] of gone.entries()) outcomes[i] = again[k] as InsertOutcome;
  }
}
