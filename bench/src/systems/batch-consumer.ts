import type { Consumer } from './types.ts';

export interface BatchConsumerDeps<J> {
  /** Jobs held at once: each round claims up to this many. */
  concurrency: number;
  claim(limit: number): Promise<J[]>;
  /** Runs the (no-op) handler of one job. */
  handle(job: J): void | Promise<void>;
  /** Acks a whole round in one statement. */
  ack(jobs: J[]): Promise<void>;
  /** Resolves when work may have arrived, or after `timeoutMs`. */
  waitForWork(timeoutMs: number): Promise<void>;
}

/**
 * The consumer loop shared by workq core in-process and the raw-SQL baseline:
 * claim a batch, run its handlers together, ack the batch in one statement.
 * Sharing it means the two differ only in what a claim and an ack cost.
 */
export function startBatchConsumer<J>(deps: BatchConsumerDeps<J>): Consumer {
  let stopping = false;
  let endWait = () => {};
  const stopped = new Promise<void>((resolve) => {
    endWait = resolve;
  });
  const loop = (async () => {
    while (!stopping) {
      const jobs = await deps.claim(deps.concurrency);
      if (jobs.length === 0) {
        // Stopping ends the wait at once: a drain's timing, which includes the stop, never waits out an idle poll.
        await Promise.race([deps.waitForWork(250), stopped]);
        continue;
      }
      await Promise.all(jobs.map((job) => deps.handle(job)));
      await deps.ack(jobs);
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      endWait();
      await loop;
    },
  };
}

/** A wait that resolves on `wake()` or after a timeout, whichever is first. */
export class WakeSignal {
  private waiters: (() => void)[] = [];

  wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  wait(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }
}
