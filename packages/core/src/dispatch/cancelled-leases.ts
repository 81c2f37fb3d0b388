import type { FinishedListener } from '../engine/local-listeners.ts';

type Wake = (id: string) => void;

/**
 * Lets an extension of held leases wait, in this process, for one of its jobs to be cancelled, so that the
 * worker holding it hears at once rather than at its next extension. Only a cancellation wakes a wait: a job
 * completed or dead was ended by its own worker, so acks cost a waiting extension nothing but a state check.
 * Cancellations through other servers are heard at the next extension, which the lease fences.
 */
export class CancelledLeases {
  private readonly waiters = new Map<string, Set<Wake>>();
  private readonly ends = new Set<() => void>();
  private closed = false;

  /** `onFinished`: the engine's finished-job listeners (`Engine.onFinished`). */
  constructor(onFinished: (listener: FinishedListener) => () => void) {
    onFinished((id, state) => {
      if (state !== 'cancelled') return;
      const wakes = this.waiters.get(id);
      if (wakes) for (const wake of [...wakes]) wake(id);
    });
  }

  /**
   * Resolves to the first of `ids` cancelled in this process from now on, as a list of one; to none after
   * `timeoutMs`, on abort, or when closed.
   */
  waitForCancel(ids: readonly string[], timeoutMs: number, signal: AbortSignal): Promise<string[]> {
    if (this.closed || signal.aborted || timeoutMs <= 0 || ids.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const end = (cancelled: string[]) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', endUnheard);
        this.ends.delete(endUnheard);
        for (const id of ids) {
          const wakes = this.waiters.get(id);
          wakes?.delete(wake);
          if (wakes?.size === 0) this.waiters.delete(id);
        }
        resolve(cancelled);
      };
      const endUnheard = () => end([]);
      const wake: Wake = (id) => end([id]);
      const timer = setTimeout(endUnheard, timeoutMs);
      signal.addEventListener('abort', endUnheard, { once: true });
      this.ends.add(endUnheard);
      for (const id of ids) {
        const wakes = this.waiters.get(id);
        if (wakes) wakes.add(wake);
        else this.waiters.set(id, new Set([wake]));
      }
    });
  }

  /** Ends every wait with none cancelled; later waits end at once. */
  close(): void {
    this.closed = true;
    for (const end of [...this.ends]) end();
  }
}
