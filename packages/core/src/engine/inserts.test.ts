import { describe, expect, it } from 'vitest';
import { WorkqError } from '../errors.ts';
import { createEngine } from './engine.ts';
import { newJobId } from './ids.ts';
import { insertDistinct, KEY_HOLDER_TRIES } from './inserts.ts';
import type { InsertOutcome, JobRecord, NewJob, Store } from './store.ts';

const at = new Date('2030-01-01T00:00:00Z');

/** The fields of a just-inserted job these tests read. */
function insertedRecord(job: NewJob): JobRecord {
  return { ...job, state: 'waiting' } as unknown as JobRecord;
}

function newJob(idempotencyKey: string | null, name = 'a'): NewJob {
  return {
    id: newJobId(),
    name,
    version: 1,
    payload: { idempotencyKey },
    priority: 0,
    order: 'fifo',
    runAt: at,
    createdAt: at,
    maxAttempts: 1,
    backoff: { type: 'fixed', delayMs: 0 },
    leaseMs: 1_000,
    idempotencyKey,
    idempotencyExpiresAt: null,
    debounceKey: null,
    replayOf: null,
    traceContext: null,
  };
}

/** A store whose insert reports `KeyHolderGone` for key `'vanishing'` the first `vanishFor` times it sees it. */
function vanishingStore(vanishFor: number) {
  const calls: NewJob[][] = [];
  let vanished = 0;
  const store = {
    insertJobs: async (jobs: readonly NewJob[]): Promise<InsertOutcome[]> => {
      calls.push([...jobs]);
      return jobs.map((job) => {
        if (job.idempotencyKey === 'vanishing' && vanished < vanishFor) {
          vanished++;
          return { job: null, created: false };
        }
        return { job: insertedRecord(job), created: true };
      });
    },
    moveJob: async (): Promise<InsertOutcome | null> => {
      calls.push([]);
      return vanished++ < vanishFor
        ? { job: null, created: false }
        : { job: insertedRecord(newJob(null)), created: true };
    },
    // No flow-control settings: no type is grouped.
    listQueueSettings: async () => [],
    onParentsReady: () => () => undefined,
  } as unknown as Store;
  return { store, calls };
}

describe('inserts: the engine’s one policy for idempotency keys', () => {
  it('sends a key repeated within a batch once; the later jobs get the first one’s job, not created', async () => {
    const { store, calls } = vanishingStore(0);
    const jobs = [newJob('k'), newJob(null), newJob('k'), newJob('k', 'b')];
    const outcomes = await insertDistinct(store, jobs);
    expect(calls).toEqual([[jobs[0], jobs[1], jobs[3]]]);
    expect(outcomes.map((o) => [o.job.id, o.created])).toEqual([
      [jobs[0]?.id, true],
      [jobs[1]?.id, true],
      [jobs[0]?.id, false],
      [jobs[3]?.id, true],
    ]);
  });

  it('sends again only the jobs whose key holder vanished mid-insert, until they land', async () => {
    const { store, calls } = vanishingStore(KEY_HOLDER_TRIES - 1);
    const jobs = [newJob(null), newJob('vanishing')];
    const outcomes = await insertDistinct(store, jobs);
    expect(calls).toEqual([jobs, [jobs[1]], [jobs[1]]]);
    expect(outcomes.map((o) => [o.job.id, o.created])).toEqual(jobs.map((job) => [job.id, true]));
  });

  it(`fails with a retryable UNAVAILABLE when the holder vanished ${KEY_HOLDER_TRIES} times`, async () => {
    const { store, calls } = vanishingStore(KEY_HOLDER_TRIES);
    const error = await insertDistinct(store, [newJob('vanishing')]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkqError);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    expect(calls).toHaveLength(KEY_HOLDER_TRIES);
  });

  it(`moveTo follows the same policy: tried again, up to ${KEY_HOLDER_TRIES} times in all`, async () => {
    const lease = { id: 'held', leaseToken: 'token' };
    const next = { name: 'b', version: 1, payload: {}, options: { idempotencyKey: 'vanishing' } };
    const landing = vanishingStore(KEY_HOLDER_TRIES - 1);
    expect(await createEngine({ store: landing.store }).moveTo(lease, next)).toMatchObject({ created: true });
    expect(landing.calls).toHaveLength(KEY_HOLDER_TRIES);

    const failing = vanishingStore(KEY_HOLDER_TRIES);
    const error = await createEngine({ store: failing.store })
      .moveTo(lease, next)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    expect(failing.calls).toHaveLength(KEY_HOLDER_TRIES);
  });
});

describe('inserts: debounced jobs in a batch', () => {
  it('sends the last job of each debounce key to debounceJobs, the rest to insertJobs; the first of a key reports the outcome', async () => {
    const sent: { insert: NewJob[][]; debounce: NewJob[][] } = { insert: [], debounce: [] };
    let vanished = 0;
    const store = {
      insertJobs: async (jobs: readonly NewJob[]) => {
        sent.insert.push([...jobs]);
        return jobs.map((job) => ({ job: insertedRecord(job), created: true }));
      },
      // The first debounce finds its key's holder started: the engine sends that job again.
      debounceJobs: async (jobs: readonly NewJob[]) => {
        sent.debounce.push([...jobs]);
        return jobs.map((job) =>
          vanished++ === 0 ? { job: null, created: false } : { job: insertedRecord(job), created: true },
        );
      },
    } as unknown as Store;
    const debounced = (key: string, n: number): NewJob => ({ ...newJob(null), debounceKey: key, payload: { n } });
    const jobs = [debounced('d', 1), newJob('k'), debounced('d', 2), debounced('e', 3), newJob(null)];
    const outcomes = await insertDistinct(store, jobs);
    expect(sent.insert).toEqual([[jobs[1], jobs[4]]]);
    expect(sent.debounce).toEqual([[jobs[2], jobs[3]], [jobs[2]]]);
    expect(outcomes.map((o) => [o.job.id, o.created])).toEqual([
      [jobs[2]?.id, true],
      [jobs[1]?.id, true],
      [jobs[2]?.id, false],
      [jobs[3]?.id, true],
      [jobs[4]?.id, true],
    ]);
  });
});
