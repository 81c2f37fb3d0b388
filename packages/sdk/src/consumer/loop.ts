/**
 * The consumer loop. It owns no I/O: it is handed `claim` and `handle` and
 * keeps up to `concurrency` jobs in flight, claiming only free capacity.
 */
export interface ConsumerLoopDeps<J> {
  concurrency: number;
  /** Leases up to `limit` jobs; may wait for work until `signal` aborts. */
  claim(limit: number, signal: AbortSignal): Promise<J[]>;
  /** Runs one job to its end (ack or fail included). Must not reject. */
  handle(job: J): Promise<void>;
  /** Called when a claim fails; resolves after the delay before the next try. */
  backoff(failures: number, error: unknown, signal: AbortSignal): Promise<void>;
}

/** Runs until `signal` aborts, then waits for the jobs in flight. */
export async function runConsumerLoop<J>(deps: ConsumerLoopDeps<J>, signal: AbortSignal): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  let failures = 0;
  while (!signal.aborted) {
    if (inFlight.size >= deps.concurrency) {
      await Promise.race(inFlight);
      continue;
    }
    let jobs: J[];
    try {
      jobs = await deps.claim(deps.concurrency - inFlight.size, signal);
      failures = 0;
    } catch (error) {
      if (signal.aborted) break;
      failures++;
      await deps.backoff(failures, error, signal);
      continue;
    }
    for (const job of jobs) {
      const running: Promise<void> = deps.handle(job).finally(() => inFlight.delete(running));
      inFlight.add(running);
    }
  }
  await Promise.allSettled([...inFlight]);
}
