import type { JobRecord, StoredState } from './store.ts';

export type ReadyListener = (name: string) => void;
export type FinishedListener = (id: string, state: StoredState) => void;

/**
 * Who an engine tells, in its own process, that jobs of a type may have
 * become ready, and that a job finished (completed, dead, cancelled).
 */
export class LocalListeners {
  private readonly readyListeners = new Set<ReadyListener>();
  private readonly finishedListeners = new Set<FinishedListener>();

  onReady(listener: ReadyListener): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  onFinished(listener: FinishedListener): () => void {
    this.finishedListeners.add(listener);
    return () => this.finishedListeners.delete(listener);
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

  clear(): void {
    this.readyListeners.clear();
    this.finishedListeners.clear();
  }
}
