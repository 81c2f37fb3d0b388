import type { InsertOutcome, JobRecord, NewJob } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';

/** How many times `insertAroundTakenIds` reads the holders of taken ids and inserts the rest before it gives up. */
export const TAKEN_ID_ROUNDS = 3;

/** What `insertAroundTakenIds` needs of a SQL store. */
export interface TakenIdSteps {
  /** The store's insert of a batch of distinct ids (taken keys answered as `Store.insertJobs` says). */
  insert(jobs: readonly NewJob[]): Promise<InsertOutcome[]>;
  /** The retained jobs holding any of `ids`, by id. */
  holders(ids: readonly string[]): Promise<Map<string, JobRecord>>;
  /** Whether `error` is the insert's failure on a taken id (the primary key): the statement inserted nothing. */
  isTakenId(error: unknown): boolean;
}

/**
 * `Store.insertJobs` for the SQL stores, whose plain insert fails as a whole on a taken id, so that the usual
 * batch (fresh ids) costs one statement and no conflict check. `first` is that attempt's failure, when it was
 * on a taken id: then the jobs holding the batch's ids are read, and answered with `created: false` (the
 * engine tells the same job from a different one), and the others inserted again. A concurrent insert may
 * take an id meanwhile: the read and insert repeat, up to `TAKEN_ID_ROUNDS` times, then the call fails with
 * a retryable `UNAVAILABLE`. Outcomes in input order.
 */
export async function insertAroundTakenIds(jobs: readonly NewJob[], steps: TakenIdSteps): Promise<InsertOutcome[]> {
  const outcomes = new Map<NewJob, InsertOutcome>();
  let pending = jobs;
  for (let round = 1; pending.length > 0; round++) {
    const held = await steps.holders(pending.map((job) => job.id));
    const rest: NewJob[] = [];
    for (const job of pending) {
      const holder = held.get(job.id);
      if (holder) outcomes.set(job, { job: holder, created: false });
      else rest.push(job);
    }
    pending = [];
    if (rest.length === 0) break;
    try {
      const inserted = await steps.insert(rest);
      for (const [i, job] of rest.entries()) outcomes.set(job, inserted[i] as InsertOutcome);
    } catch (error) {
      if (!steps.isTakenId(error)) throw error;
      if (round >= TAKEN_ID_ROUNDS) {
        throw new WorkqError(
          'UNAVAILABLE',
          'The ids of this enqueue kept being taken by concurrent enqueues as it was stored; nothing more was enqueued for them. Try again.',
          { retryable: true },
        );
      }
      pending = rest;
    }
  }
  return jobs.map((job) => outcomes.get(job) as InsertOutcome);
}
