import { defineJob } from '@workq/core';
import type { ClaimedJob } from '@workq/queue-server/router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { silentLogger } from '../logger.ts';
import type { Call, QueueApi } from '../transport.ts';
import type { ConsumeOptions } from './types.ts';
import { startWorker } from './worker.ts';

const probe = defineJob({ version: 1, payload: z.object({ n: z.number() }) });

/** A leased job as a claim's answer carries it, leased now by the (fake) clock for `leaseMs`. */
function leased(n: number, leaseMs: number): ClaimedJob {
  return {
    id: `job-${n}`,
    name: 'probe',
    version: 1,
    payload: { n },
    attempt: 1,
    maxAttempts: 5,
    leaseToken: `token-${n}`,
    leaseMs,
    progress: 0,
    leaseExpiresAtMs: Date.now() + leaseMs,
    runAtMs: Date.now(),
  };
}

/**
 * A worker over a stand-in server: its first claim is answered by `firstClaim` (which may move the clock, as a
 * paused process would see it); later claims find nothing. Records handler runs, releases and completions.
 */
function workerOn(firstClaim: () => ClaimedJob[], handle: (n: number) => Promise<void>, options: ConsumeOptions) {
  const ran: number[] = [];
  const released: { id: string; leaseToken: string }[][] = [];
  const completed: string[] = [];
  let claims = 0;
  const api = {
    consumer: {
      claim: {
        mutate: async (input: { complete: { id: string }[] }) => {
          claims++;
          if (claims === 1) return { jobs: firstClaim(), completed: [], acksFailed: false };
          // Later claims find no work, after a moment; acks ride along with them.
          await new Promise((resolve) => setTimeout(resolve, 2));
          const acked = input.complete.map((item) => item.id);
          completed.push(...acked);
          return { jobs: [], completed: acked, acksFailed: false };
        },
      },
      release: {
        mutate: async (input: { items: { id: string; leaseToken: string }[] }) => {
          released.push(input.items);
          return input.items.map((item) => item.id);
        },
      },
      complete: {
        mutate: async (input: { items: { id: string }[] }) => {
          completed.push(...input.items.map((item) => item.id));
          return input.items.map((item) => ({ id: item.id, ok: true }));
        },
      },
      extend: { mutate: () => new Promise(() => undefined) },
      stopWaiting: { mutate: async () => ({ claims: 0 }) },
    },
  } as unknown as QueueApi;
  const call = (<T>(run: (a: QueueApi, signal: AbortSignal) => Promise<T>, timing?: { signal?: AbortSignal }) =>
    run(api, timing?.signal ?? new AbortController().signal)) as Call;
  const errors: unknown[] = [];
  const worker = startWorker({
    name: 'probe',
    definition: probe,
    definitionOf: () => probe,
    call,
    ready: async () => undefined,
    handler: async (job) => {
      const { n } = (job as { payload: { n: number } }).payload;
      ran.push(n);
      await handle(n);
      return null;
    },
    options: { ...options, onError: (error) => errors.push(error) },
    url: 'http://127.0.0.1:1',
    logger: silentLogger,
    tokenRefreshes: false,
  });
  return { worker, ran, released, completed, errors };
}

/** A claim's answer, leased now, that this process reads only `delayMs` later by its clock. */
function answerReadAfter(delayMs: number, lease: () => ClaimedJob[]): () => ClaimedJob[] {
  return () => {
    const jobs = lease();
    vi.setSystemTime(Date.now() + delayMs);
    return jobs;
  };
}

async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((resolve) => setTimeout(resolve, 1));
}

describe('a worker starting jobs', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('hands back, unstarted, the jobs of a claim whose answer it read only after their leases ran out', async () => {
    // The process was paused for 40 s with the answer waiting to be read.
    const { worker, ran, released, errors } = workerOn(
      answerReadAfter(40_000, () => [leased(1, 30_000), leased(2, 30_000)]),
      async () => undefined,
      { concurrency: 2 },
    );
    await until(() => released.length > 0);
    await worker.close();
    expect(ran).toEqual([]);
    expect(released.flat()).toEqual([
      { id: 'job-1', leaseToken: 'token-1' },
      { id: 'job-2', leaseToken: 'token-2' },
    ]);
    expect(errors).toEqual([
      expect.objectContaining({ code: 'LEASE_LOST', message: expect.stringMatching(/2 .*unstarted/) }),
    ]);
  });

  it('hands back a job whose lease has less than the start margin left, and runs one that has more', async () => {
    // Leased for 10 s (a 1 s margin) and read 9.5 s after the claim went out; the other, for 60 s.
    const { worker, ran, released, completed } = workerOn(
      answerReadAfter(9_500, () => [leased(1, 10_000), leased(2, 60_000)]),
      async () => undefined,
      { concurrency: 2 },
    );
    await until(() => released.length > 0 && completed.length > 0);
    await worker.close();
    expect(ran).toEqual([2]);
    expect(released.flat()).toEqual([{ id: 'job-1', leaseToken: 'token-1' }]);
    expect(completed).toEqual(['job-2']);
  });

  it('checks prefetched jobs when a slot frees: those whose leases ran out meanwhile go back unstarted', async () => {
    const { worker, ran, released, completed } = workerOn(
      () => [leased(1, 30_000), leased(2, 30_000), leased(3, 30_000)],
      async (n) => {
        // The first job stalls (and no lease extension gets through) past the others' leases.
        if (n === 1) vi.setSystemTime(Date.now() + 45_000);
      },
      { concurrency: 1, prefetch: 2 },
    );
    await until(() => released.length > 0 && completed.length > 0);
    await worker.close();
    expect(ran).toEqual([1]);
    expect(released.flat().map((item) => item.id)).toEqual(['job-2', 'job-3']);
    // The first job's result is still sent: the server decides whether its lease still held.
    expect(completed).toEqual(['job-1']);
  });
});
