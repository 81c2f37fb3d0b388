import type { JobRecord, StoredState } from './store.ts';

export type ReadyListener = (name: string) => void;
export type FinishedListener = (id: string, state: StoredState) => void;
/** A job was cancelled; `workerId`: the worker that last held it (`null`: it never ran). */
export type CancelledListener = (id: string, workerId: string | null) => void;

/**
 * Who an engine tells, in its own process, that jobs of a type may have
 * become ready, that a job finished (completed, dead, cancelled), and which
 * worker last held a job that was cancelled.
 */
export class LocalListeners {
  private readonly readyListeners = new Set<ReadyListener>();
  private readonly finishedListeners = new Set<FinishedListener>();
  private readonly cancelledListeners = new Set<CancelledListener>();

  onReady(listener: ReadyListener): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  onFinished(listener: FinishedListener): () => void {
    this.finishedListeners.add(listener);
    return () => this.finishedListeners.delete(listener);
  }

  onCancelled(listener: CancelledListener): () => void {
    this.cancelledListeners.add(listener);
    return () => this.cancelledListeners.delete(listener);
  }

  /** Jobs of `name` may be ready; `'*'`: jobs of any type may be. */
  emitReady(name: string): void {
    for (const listener of this.readyListeners) listener(name);
  }

  /** `emitReady` once for each job type among `jobs`. */
  announce(jobs: readonly JobRecord[]): void {
    for (const name of new Set(jobs.map((job) => job.name))) this.emitReady(name);
  }

  emitFinished(id: string, state: StoredState): void {
    for (const listener of this.finishedListeners) listener(id, state);
  }

  emitCancelled(id: string, workerId: string | null): void {
    for (const listener of this.cancelledListeners) listener(id, workerId);
  }

  clear(): void {
    this.readyListeners.clear();
    this.finishedListeners.clear();
    this.cancelledListeners.clear();
  }
}
