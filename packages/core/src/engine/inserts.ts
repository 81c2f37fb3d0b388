import { canonicalJson } from '../contract/json-schema.ts';
import { WorkqError } from '../errors.ts';
import type { InsertOutcome, JobRecord, JobStore, KeyHolderGone, NewJob } from './store.ts';

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
 * Inserts `jobs` on `store`, each id, each `(name, idempotency key)` and each `(name, debounce key)` once. A
 * job repeating the id of an earlier one in the batch is that job (`created: false`), or `CONFLICT` when it
 * differs from it (`repeatedIds`); a job whose id the store finds taken by a different job is `CONFLICT`
 * (`checkedIds`). A job repeating the idempotency key of an earlier one in the batch is not sent, and gets
 * that one's job with `created: false` (the first one wins). Debounced jobs of one key are one job too, as
 * if enqueued one after the other, each changing the one before as its mode says (`debouncedAgain`), and that
 * job is sent (`Store.debounceJobs`); the first one reports whether the job was created, and the later ones get
 * it with `created: false`. Outcomes
 * are in input order.
 */
export async function insertDistinct(store: JobStore, jobs: readonly NewJob[]): Promise<Inserted[]> {
  const firstOf = repeatedIds(jobs);
  if (firstOf) {
    const unique = jobs.filter((_, i) => firstOf[i] === i);
    const slotOf = new Map(unique.map((job, k) => [job.id, k]));
    const outcomes = await insertDistinct(store, unique);
    return jobs.map((job, i) => {
      const outcome = outcomes[slotOf.get(job.id) as number] as Inserted;
      return firstOf[i] === i ? outcome : { job: outcome.job, created: false };
    });
  }
  return checkedIds(jobs, await insertKeysOnce(store, jobs));
}

/** `insertDistinct` for jobs of distinct ids. */
async function insertKeysOnce(store: JobStore, jobs: readonly NewJob[]): Promise<Inserted[]> {
  // The usual batch, without keys: every job is sent as it is, with nothing to map back.
  if (!jobs.some((job) => job.idempotencyKey !== null || job.debounceKey !== null)) {
    return insertRetrying(jobs, (some) => store.insertJobs(some));
  }
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
    // A later debounce of a key acts on the earlier one as it would on a waiting job (see `debounceMode`).
    if (debounce) distinct[slot] = debouncedAgain(distinct[slot] as NewJob, job);
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

/**
 * The job a batch sends for two debounces of one key, `earlier` then `later`: as `later`'s mode would leave a
 * waiting `earlier` (see `Store.debounceJobs`): `later` (`replace`), `later` at `earlier`'s run time
 * (`preserveRunAt`), or `earlier` (`keepFirst`).
 */
function debouncedAgain(earlier: NewJob, later: NewJob): NewJob {
  if (later.debounceMode === 'keepFirst') return earlier;
  if (later.debounceMode === 'preserveRunAt') return { ...later, runAt: earlier.runAt };
  return later;
}

/**
 * Whether two jobs are one under their id: the same type, version and payload (as stored). Enqueueing a job
 * again under its id (the SDK sending it again after a lost answer) repeats all three.
 */
function sameJob(held: Pick<JobRecord, 'name' | 'version' | 'payload'>, sent: NewJob): boolean {
  return (
    held.name === sent.name &&
    held.version === sent.version &&
    canonicalJson(held.payload) === canonicalJson(sent.payload)
  );
}

/**
 * For a batch that repeats an id, the position of the first job with each job's id; `undefined` when every id
 * is distinct (the usual case, told without a map when the ids ascend, as the SDK's and the engine's do).
 * `CONFLICT`, before anything is sent, when jobs under one id differ.
 */
function repeatedIds(jobs: readonly NewJob[]): number[] | undefined {
  let ascending = true;
  for (let i = 1; i < jobs.length && ascending; i++) ascending = (jobs[i - 1] as NewJob).id < (jobs[i] as NewJob).id;
  if (ascending) return undefined;
  const first = new Map<string, number>();
  const firstOf = jobs.map((job, i) => {
    const at = first.get(job.id);
    if (at === undefined) {
      first.set(job.id, i);
      return i;
    }
    const earlier = jobs[at] as NewJob;
    if (!sameJob(earlier, job)) {
      throw new WorkqError(
        'CONFLICT',
        `Jobs ${at} and ${i} of this batch have the same id, ${job.id}, but ${difference(earlier, job)}: give each job its own id. Nothing was enqueued.`,
        { details: { ids: [job.id] } },
      );
    }
    return at;
  });
  return firstOf.every((at, i) => at === i) ? undefined : firstOf;
}

/** What tells `held` from `sent`, which are not the same job. */
function difference(held: Pick<JobRecord, 'name' | 'version'>, sent: NewJob): string {
  if (held.name !== sent.name) return `one is a ${held.name} job, the other a ${sent.name} job`;
  if (held.version !== sent.version) return `one is of version ${held.version}, the other of version ${sent.version}`;
  return 'their payloads differ';
}

/**
 * `outcomes` as they are when no job found its id taken by a different job; otherwise `CONFLICT`, naming the
 * ids. The other jobs of the batch are enqueued, each on its own, as under idempotency keys.
 */
export function checkedIds(jobs: readonly NewJob[], outcomes: Inserted[]): Inserted[] {
  const taken: string[] = [];
  let firstTaken: { held: JobRecord; sent: NewJob } | undefined;
  for (const [i, outcome] of outcomes.entries()) {
    const sent = jobs[i] as NewJob;
    if (outcome.created || outcome.job.id !== sent.id || sameJob(outcome.job, sent)) continue;
    taken.push(sent.id);
    firstTaken ??= { held: outcome.job, sent };
  }
  if (!firstTaken) return outcomes;
  const { held, sent } = firstTaken;
  const others = jobs.length - taken.length;
  const batch =
    jobs.length > 1 ? ` ${others} other job(s) of this call were enqueued (sending them again returns them).` : '';
  throw new WorkqError(
    'CONFLICT',
    `Job id ${sent.id} is taken by another job: ${difference(held, sent)}. An id returns its job only to an enqueue of the same type, version and payload; give a new job a new id.${taken.length > 1 ? ` ${taken.length} ids of this call are taken.` : ''}${batch}`,
    { details: { ids: taken } },
  );
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
    const gone: number[] = [];
    for (let i = 0; i < jobs.length; i++) if (outcomes[i]?.job === null) gone.push(i);
    if (gone.length === 0) return outcomes as Inserted[];
    if (tries >= KEY_HOLDER_TRIES) throw keyHolderGone(`job ${jobs[gone[0] as number]?.id}`);
    const again = await send(gone.map((i) => jobs[i] as NewJob));
    for (const [k, i] of gone.entries()) outcomes[i] = again[k] as InsertOutcome;
  }
}
