/**
 * The consumer loop. It owns no I/O: it is handed `claim` and `handle` and
 * keeps up to `concurrency` jobs in flight, never asking for more than the
 * free capacity. With several claim lanes, that many claims may be out at
 * once, each asking for its share, so one round trip's wait does not idle
 * the whole worker.
 */
export interface ConsumerLoopDeps<J> {
  concurrency: number;
  /** Claims that may be outstanding at once. @defaultValue 1 */
  claimLanes?: number;
  /** Leases up to `limit` jobs; may wait for work until `signal` aborts. */
  claim(limit: number, signal: AbortSignal): Promise<J[]>;
  /** Runs one job to its end. Must not reject. */
  handle(job: J): Promise<void>;
  /** Called when a claim fails; resolves after the delay before that lane's next try. */
  backoff(failures: number, error: unknown, signal: AbortSignal): Promise<void>;
}

/** Runs until `signal` aborts, then waits for the jobs in flight. */
export async function runConsumerLoop<J>(deps: ConsumerLoopDeps<J>, signal: AbortSignal): Promise<void> {
  const laneCount = Math.max(1, Math.min(Math.floor(deps.claimLanes ?? 1), deps.concurrency));
  const inFlight = new Set<Promise<void>>();
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

  const lane = async (): Promise<void> => {
    let failures = 0;
    while (!signal.aborted) {
      const free = deps.concurrency - inFlight.size - requested;
      if (free <= 0) {
        await new Promise<void>((resolve) => capacityWaiters.push(resolve));
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
      for (const job of jobs) {
        const running: Promise<void> = deps.handle(job).finally(() => {
          inFlight.delete(running);
          capacityChanged();
        });
        inFlight.add(running);
      }
      capacityChanged();
    }
  };

  await Promise.all(Array.from({ length: laneCount }, lane));
  signal.removeEventListener('abort', onAbort);
  await Promise.allSettled([...inFlight]);
}
