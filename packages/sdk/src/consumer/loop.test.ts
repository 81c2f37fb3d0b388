import { describe, expect, it } from 'vitest';
import { runConsumerLoop } from './loop.ts';

/** A claim source over a fixed list of jobs, recording each request's limit and how many jobs run at once. */
function fakeQueue(total: number) {
  const waiting = Array.from({ length: total }, (_, i) => i);
  const limits: number[] = [];
  let running = 0;
  let peak = 0;
  const handled: number[] = [];
  let claimed = 0;
  let peakHeld = 0;
  return {
    limits,
    handled,
    peak: () => peak,
    /** The most jobs claimed but not yet finished at any time. */
    peakHeld: () => peakHeld,
    claim: async (limit: number) => {
      limits.push(limit);
      await new Promise((resolve) => setTimeout(resolve, 1));
      const jobs = waiting.splice(0, limit);
      claimed += jobs.length;
      peakHeld = Math.max(peakHeld, claimed - handled.length);
      return jobs;
    },
    handle: async (job: number) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, 2));
      handled.push(job);
      running--;
    },
  };
}

async function drain(total: number, concurrency: number, claimLanes?: number, prefetch?: number) {
  const queue = fakeQueue(total);
  const stop = new AbortController();
  const done = runConsumerLoop(
    { concurrency, claimLanes, prefetch, claim: queue.claim, handle: queue.handle, backoff: async () => undefined },
    stop.signal,
  );
  while (queue.handled.length < total) await new Promise((resolve) => setTimeout(resolve, 2));
  stop.abort();
  await done;
  return queue;
}

describe('runConsumerLoop', () => {
  it('handles every job once and never runs more than the concurrency', async () => {
    const queue = await drain(200, 8);
    expect([...queue.handled].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(queue.peak()).toBeLessThanOrEqual(8);
    expect(Math.max(...queue.limits)).toBeLessThanOrEqual(8);
  });

  it('with several lanes, the outstanding claims together never ask for more than the free capacity', async () => {
    const queue = await drain(300, 12, 3);
    expect(new Set(queue.handled).size).toBe(300);
    expect(queue.handled).toHaveLength(300);
    expect(queue.peak()).toBeLessThanOrEqual(12);
    expect(queue.limits.some((limit) => limit < 12)).toBe(true);
  });

  it('with prefetch, holds up to concurrency + prefetch jobs, runs only concurrency, and claims in batches', async () => {
    const queue = await drain(300, 2, 1, 10);
    expect([...queue.handled].sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(queue.peak()).toBeLessThanOrEqual(2);
    expect(queue.peakHeld()).toBeGreaterThan(2);
    expect(queue.peakHeld()).toBeLessThanOrEqual(12);
    expect(Math.min(...queue.limits)).toBeGreaterThanOrEqual(10);
    // About one claim per 10 jobs (plus the empty ones at the end), against one per 1 or 2 jobs without prefetch.
    expect(queue.limits.length).toBeLessThan(300 / 10 + 6);
  });

  it('with prefetch, sizes a claim by the slots free when it goes out, counting jobs that finished in the same turn', async () => {
    const waiting = Array.from({ length: 120 }, (_, i) => i);
    const limits: number[] = [];
    const handled: number[] = [];
    const stop = new AbortController();
    const done = runConsumerLoop(
      {
        concurrency: 2,
        prefetch: 10,
        claim: async (limit) => {
          limits.push(limit);
          await new Promise((resolve) => setTimeout(resolve, 1));
          return waiting.splice(0, limit);
        },
        // Fast handlers, each a few promise steps long (as the worker's are): a batch ends within one turn.
        handle: async (job) => {
          for (let step = 0; step < 10; step++) await Promise.resolve();
          handled.push(job);
        },
        backoff: async () => undefined,
      },
      stop.signal,
    );
    while (handled.length < 120) await new Promise((resolve) => setTimeout(resolve, 1));
    stop.abort();
    await done;
    expect(new Set(handled).size).toBe(120);
    // The whole capacity (2 running + 10 held) each time, not the 10 free when the first slots opened.
    expect(limits.slice(0, 10)).toEqual(Array(10).fill(12));
  });

  it('with prefetch and several lanes, the lanes claim side by side, each for its share', async () => {
    let outstanding = 0;
    let peakOutstanding = 0;
    const limits: number[] = [];
    const stop = new AbortController();
    let next = 0;
    const done = runConsumerLoop(
      {
        concurrency: 4,
        prefetch: 8,
        claimLanes: 2,
        claim: async (limit) => {
          limits.push(limit);
          peakOutstanding = Math.max(peakOutstanding, ++outstanding);
          await new Promise((resolve) => setTimeout(resolve, 5));
          outstanding--;
          return Array.from({ length: limit }, () => next++);
        },
        handle: async () => undefined,
        backoff: async () => undefined,
      },
      stop.signal,
    );
    while (limits.length < 10) await new Promise((resolve) => setTimeout(resolve, 1));
    stop.abort();
    await done;
    expect(limits.slice(0, 2)).toEqual([6, 6]);
    expect(peakOutstanding).toBe(2);
  });

  it('with prefetch given as a function, holds only what it runs once the function answers 0', async () => {
    const queue = fakeQueue(200);
    let prefetch = 10;
    const stop = new AbortController();
    const done = runConsumerLoop(
      {
        concurrency: 2,
        prefetch: () => prefetch,
        claim: async (limit) => {
          const jobs = await queue.claim(limit);
          // The first answer says the type is limited (as a worker learns from its claim's answer).
          prefetch = 0;
          return jobs;
        },
        handle: queue.handle,
        backoff: async () => undefined,
      },
      stop.signal,
    );
    while (queue.handled.length < 200) await new Promise((resolve) => setTimeout(resolve, 2));
    stop.abort();
    await done;
    expect(new Set(queue.handled).size).toBe(200);
    expect(queue.limits[0]).toBe(12);
    expect(Math.max(...queue.limits.slice(1))).toBeLessThanOrEqual(2);
  });

  it('runs the prefetched jobs it holds when stopped', async () => {
    const stop = new AbortController();
    const handled: number[] = [];
    const done = runConsumerLoop(
      {
        concurrency: 1,
        prefetch: 3,
        claim: async () => (handled.length === 0 ? [1, 2, 3, 4] : new Promise<number[]>(() => undefined)),
        handle: async (job) => {
          stop.abort();
          await new Promise((resolve) => setTimeout(resolve, 5));
          handled.push(job);
        },
        backoff: async () => undefined,
      },
      stop.signal,
    );
    await done;
    expect(handled).toEqual([1, 2, 3, 4]);
  });

  it('backs off after a failed claim and keeps going', async () => {
    let calls = 0;
    const failures: number[] = [];
    const stop = new AbortController();
    const handled: number[] = [];
    const done = runConsumerLoop(
      {
        concurrency: 2,
        claim: async () => {
          calls++;
          if (calls <= 2) throw new Error('server restarting');
          if (calls === 3) return [1, 2];
          await new Promise((resolve) => setTimeout(resolve, 5));
          return [];
        },
        handle: async (job) => void handled.push(job),
        backoff: async (count) => void failures.push(count),
      },
      stop.signal,
    );
    while (handled.length < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    stop.abort();
    await done;
    expect(failures).toEqual([1, 2]);
    expect(handled).toEqual([1, 2]);
  });

  it('waits for jobs in flight when stopped', async () => {
    const stop = new AbortController();
    let finished = false;
    const done = runConsumerLoop(
      {
        concurrency: 1,
        claim: async () => (finished ? new Promise<number[]>(() => undefined) : [1]),
        handle: async () => {
          stop.abort();
          await new Promise((resolve) => setTimeout(resolve, 20));
          finished = true;
        },
        backoff: async () => undefined,
      },
      stop.signal,
    );
    await done;
    expect(finished).toBe(true);
  });
});
