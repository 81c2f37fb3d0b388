import type { Clock } from '../engine/clock.ts';
import type { Store } from '../engine/store.ts';

const REPORT_EVERY_MS = 5_000;

/** Records which consumers read which job versions, at most once per consumer and job every few seconds. */
export class PresenceTracker {
  private readonly lastReported = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async seen(worker: {
    id: string;
    host: string;
    name: string;
    minVersion: number;
    maxVersion: number;
  }): Promise<void> {
    const now = this.clock.now();
    const key = `${worker.id}\u0000${worker.name}`;
    if (now.getTime() - (this.lastReported.get(key) ?? 0) < REPORT_EVERY_MS) return;
    this.lastReported.set(key, now.getTime());
    if (this.lastReported.size > 10_000) this.lastReported.clear();
    await this.store.recordWorker({ ...worker, seenAt: now });
  }
}
