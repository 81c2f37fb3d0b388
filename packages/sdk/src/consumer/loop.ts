import { nextTurn } from '../next-turn.ts';

/**
 * The consumer loop. It owns no I/O: it is handed `claim` and `handle` and
 * keeps up to `concurrency` jobs running. With `prefetch`, it also holds up
 * to that many claimed jobs in a local queue, so a slot that frees starts its
 * next job without a round trip, and claims come in fewer, larger batches.
 * With several claim lanes, that many claims may be out at once, each asking
 * for its share, so one round trip's wait does not idle the whole worker.
 */
export interface ConsumerLoopDeps<J> {
  concurrency: number;
  /**
   * Claimed jobs held, beyond the running ones, waiting for a free slot; a function is asked again before each
   * claim (a worker stops prefetching a type whose limits count leased jobs). @defaultValue 0
   */
  prefetch?: number | (() => number);
  /** Claims that may be outstanding at once. @defaultValue 1 */
  claimLanes?: number;
  /** Leases up to `limit` jobs; may wait for work until `signal` aborts. */
  claim(limit: number, signal: AbortSignal): Promise<J[]>;
  /** Runs one job to its end. Must not reject. */
  handle(job: J): Promise<void>;
  /** Called when a claim fails; resolves after the delay before that lane's next try. */
  backoff(failures: number, error: unknown, signal: AbortSignal): Promise<void>;
}

/** Runs until `signal` aborts, then runs the jobs it holds (running and prefetched) to their end. */
export async function runConsumerLoop<J>(deps: ConsumerLoopDeps<J>, signal: AbortSignal): Promise<void> {
  const prefetchOption = deps.prefetch ?? 0;
  const prefetchNow = () =>
    Math.max(0, Math.floor(typeof prefetchOption === 'function' ? prefetchOption() : prefetchOption));
  const laneCount = Math.max(1, Math.min(Math.floor(deps.claimLanes ?? 1), deps.concurrency));
  // Without prefetch a claim goes out as soon as one slot is free; with it, once the
  // local queue has room for a lane's share of a prefetch batch. Either way it asks for
  // its share of the room there is once the jobs finishing in that turn have freed theirs.
  const claimWhenFree = (prefetch: number) => Math.max(1, Math.floor(prefetch / laneCount));
  const inFlight = new Set<Promise<void>>();
  const queued: J[] = [];
  let requested = 0;
  let claiming = 0;
  let capacityWaiters: (() => void)[] = [];
  const capacityChanged = () => {
    const waiters = capacityWaiters;
    capacityWaiters = [];
    for (const wake of waiters) wake();
  };
  const onAbort = () => capacityChanged();
  signal.addEventListener('abort', onAbort, { once: true });

  const startQueued = (): void => {
    while (inFlight.size < deps.concurrency && queued.length > 0) {
      const running: Promise<void> = deps.handle(queued.shift() as J).finally(() => {
        inFlight.delete(running);
        startQueued();
        capacityChanged();
      });
      inFlight.add(running);
    }
  };

  const lane = async (): Promise<void> => {
    let failures = 0;
    while (!signal.aborted) {
      const prefetch = prefetchNow();
      const free = deps.concurrency + prefetch - inFlight.size - queued.length - requested;
      if (free < claimWhenFree(prefetch)) {
        await new Promise<void>((resolve) => capacityWaiters.push(resolve));
        // Jobs that finish in this same turn free their slots too: the claim then asks for them as well.
        await new Promise<void>((resolve) => nextTurn(resolve));
        continue;
      }
      const limit = Math.ceil(free / (laneCount - claiming));
      requested += limit;
      claiming++;
      let jobs: J[];
      try {
        jobs = await deps.claim(limit, signal);
        failures = 0;
      } catch (error) {
        if (signal.aborted) break;
        failures++;
        await deps.backoff(failures, error, signal);
        continue;
      } finally {
        requested -= limit;
        claiming--;
      }
      queued.push(...jobs);
      startQueued();
      capacityChanged();
    }
  };

  await Promise.all(Array.from({ length: laneCount }, lane));
  signal.removeEventListener('abort', onAbort);
  while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
}
