import type { Clock } from '../engine/clock.ts';
import { type RegistryStore, WORKER_REGISTRY_BOUNDS, type WorkerPresence } from '../engine/store.ts';

const DEFAULT_REPORT_EVERY_MS = 5_000;
/** Entries kept per map before it is cleared (a server that saw this many consumers starts counting again). */
const MAX_TRACKED = 10_000;

/**
 * Records the worker registry's presence: which consumers read which job
 * versions, from which host and process, and when each was last seen. A
 * claim writes a consumer's whole presence, a lease extension only its
 * last-seen time (a worker busy with long jobs claims nothing meanwhile, and
 * stays listed). Each consumer's writes are at least `reportEveryMs` apart.
 *
 * Presence is bookkeeping, best-effort on both paths: a write the store fails
 * is handed to `onFailure` (the server logs it) and tried again at the
 * consumer's next claim or extension; it never fails the claim or extension
 * it rides on.
 */
export class PresenceTracker {
  private readonly lastReported = new Map<string, number>();
  private readonly lastTouched = new Map<string, number>();

  constructor(
    private readonly store: RegistryStore,
    private readonly clock: Clock,
    private readonly reportEveryMs = DEFAULT_REPORT_EVERY_MS,
    private readonly onFailure: (error: unknown) => void = () => undefined,
  ) {}

  /**
   * A consumer claimed: its presence is written unless it was within `reportEveryMs`, and while the
   * registry has room for it (`WORKER_REGISTRY_BOUNDS`). Resolves to false when the registry was full or
   * the write failed: the consumer goes unlisted until a later claim, and its claims are served all the same.
   */
  async seen(worker: Omit<WorkerPresence, 'seenAt'>): Promise<boolean> {
    const now = this.clock.now();
    const key = `${worker.id}\u0000${worker.name}`;
    if (!this.due(this.lastReported, key, now)) return true;
    const idleBefore = new Date(now.getTime() - WORKER_REGISTRY_BOUNDS.idleAfterMs);
    const recorded = await this.store
      .recordWorker({ ...worker, seenAt: now }, { maxWorkers: WORKER_REGISTRY_BOUNDS.maxWorkers, idleBefore })
      .catch((error: unknown) => this.failed(error));
    // Not recorded: try again at its next claim, when an idle row may have made room.
    if (!recorded) this.lastReported.delete(key);
    return recorded;
  }

  /**
   * A consumer extended its leases: its last-seen time moves, unless it moved within `reportEveryMs`.
   * Resolves once written, or once a failed write was reported; never rejects.
   */
  async touched(workerId: string): Promise<void> {
    const now = this.clock.now();
    if (!this.due(this.lastTouched, workerId, now)) return;
    await this.store.touchWorkers([workerId], now).catch((error: unknown) => {
      this.lastTouched.delete(workerId);
      this.failed(error);
    });
  }

  private failed(error: unknown): false {
    this.onFailure(error);
    return false;
  }

  private due(last: Map<string, number>, key: string, now: Date): boolean {
    if (now.getTime() - (last.get(key) ?? 0) < this.reportEveryMs) return false;
    if (last.size >= MAX_TRACKED) last.clear();
    last.set(key, now.getTime());
    return true;
  }
}
