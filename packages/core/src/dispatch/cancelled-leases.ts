import type { CancelledListener } from '../engine/local-listeners.ts';

type Wake = (id: string) => void;

/**
 * Where `CancelledLeases` hears of cancellations, each naming the worker that last held the job: the engine's
 * own (`Engine.onCancelled`: every job cancelled in this process, directly or with its flow, once) and other
 * servers' (`WakeupBus.onCancelled`).
 */
export interface CancellationSources {
  onCancelled: readonly ((listener: CancelledListener) => () => void)[];
}

/** A wait's keys: its jobs' ids, and the worker it is for. */
interface Watched {
  ids: readonly string[];
  workerId: string | undefined;
}

/**
 * Lets an extension of held leases wait for one of its jobs to be cancelled, so that the worker holding it
 * hears at once rather than at its next extension. A wait is woken by a cancellation of one of its jobs, or of
 * any job its worker last held: a job the worker claimed after the extension was sent is heard too, so a worker
 * keeps one extension waiting and its jobs cost nothing each. Cancellations through other servers arrive over
 * the wake-up bus. Only a cancellation wakes a wait: a job completed or dead was ended by its own worker, so
 * acks cost a waiting extension nothing but a state check.
 */
export class CancelledLeases {
  private readonly byJob = new Map<string, Set<Wake>>();
  private readonly byWorker = new Map<string, Set<Wake>>();
  private readonly ends = new Set<() => void>();
  private closed = false;

  constructor(sources: CancellationSources) {
    for (const onCancelled of sources.onCancelled) onCancelled((id, workerId) => this.heard(id, workerId));
  }

  /**
   * Resolves to the first job cancelled from now on that is one of `ids` or was last held by `workerId`, as a
   * list of one; to none after `timeoutMs`, on abort, or when closed.
   */
  waitForCancel(watched: Watched, timeoutMs: number, signal: AbortSignal): Promise<string[]> {
    const { ids, workerId } = watched;
    if (this.closed || signal.aborted || timeoutMs <= 0) return Promise.resolve([]);
    if (ids.length === 0 && workerId === undefined) return Promise.resolve([]);
    return new Promise((resolve) => {
      const end = (cancelled: string[]) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', endUnheard);
        this.ends.delete(endUnheard);
        for (const id of ids) forget(this.byJob, id, wake);
        if (workerId !== undefined) forget(this.byWorker, workerId, wake);
        resolve(cancelled);
      };
      const endUnheard = () => end([]);
      const wake: Wake = (id) => end([id]);
      const timer = setTimeout(endUnheard, timeoutMs);
      signal.addEventListener('abort', endUnheard, { once: true });
      this.ends.add(endUnheard);
      for (const id of ids) remember(this.byJob, id, wake);
      if (workerId !== undefined) remember(this.byWorker, workerId, wake);
    });
  }

  /** Ends every wait with none cancelled; later waits end at once. */
  close(): void {
    this.closed = true;
    for (const end of [...this.ends]) end();
  }

  private heard(id: string, workerId: string | null): void {
    const wakes = new Set([
      ...(this.byJob.get(id) ?? []),
      ...((workerId !== null && this.byWorker.get(workerId)) || []),
    ]);
    for (const wake of wakes) wake(id);
  }
}

function remember(registry: Map<string, Set<Wake>>, key: string, wake: Wake): void {
  const wakes = registry.get(key);
  if (wakes) wakes.add(wake);
  else registry.set(key, new Set([wake]));
}

function forget(registry: Map<string, Set<Wake>>, key: string, wake: Wake): void {
  const wakes = registry.get(key);
  wakes?.delete(wake);
  if (wakes?.size === 0) registry.delete(key);
}
