/** Minutes of throughput kept per job type: the last hour. */
export const WINDOW_MINUTES = 60;

/** Jobs finished per minute of the last hour: `completed[i]` is minute `i`, oldest first. */
export interface Throughput {
  completed: number[];
  failed: number[];
}

/** A finish: a job completed, or one of its attempts failed (on its last attempt, the job is dead). */
export interface Finish {
  name: string;
  id: string;
  kind: 'completed' | 'failed';
  /** The attempt that failed; a failure is counted once per attempt. */
  attempt?: number;
  at: Date;
}

const MINUTE_MS = 60_000;

/**
 * Finishes per job type and minute over the last hour, from the store's
 * history and the event stream alike: each completion and each failed
 * attempt counts once, however many times it is seen (a job read from
 * history and then heard of on the stream, a `failed` and a `dead` event of
 * one attempt).
 */
export class ThroughputCounter {
  private readonly minutes = new Map<string, Map<number, { completed: number; failed: number }>>();
  /** What was counted in the last hour, by key, with its minute. */
  private readonly counted = new Map<string, number>();
  private prunedAt = 0;

  count(finish: Finish, nowMs = Date.now()): void {
    const minute = Math.floor(finish.at.getTime() / MINUTE_MS);
    const oldest = Math.floor(nowMs / MINUTE_MS) - WINDOW_MINUTES;
    this.prune(oldest);
    if (minute <= oldest) return;
    const key = finish.kind === 'completed' ? `c:${finish.id}` : `f:${finish.id}:${finish.attempt ?? 0}`;
    if (this.counted.has(key)) return;
    this.counted.set(key, minute);
    const byMinute = this.minutes.get(finish.name) ?? new Map<number, { completed: number; failed: number }>();
    this.minutes.set(finish.name, byMinute);
    const counts = byMinute.get(minute) ?? { completed: 0, failed: 0 };
    counts[finish.kind]++;
    byMinute.set(minute, counts);
  }

  /** Per-minute completions and failures of `name` over the last hour, oldest minute first. */
  series(name: string, nowMs = Date.now()): Throughput {
    const byMinute = this.minutes.get(name);
    const current = Math.floor(nowMs / MINUTE_MS);
    const completed: number[] = [];
    const failed: number[] = [];
    for (let minute = current - WINDOW_MINUTES + 1; minute <= current; minute++) {
      const counts = byMinute?.get(minute);
      completed.push(counts?.completed ?? 0);
      failed.push(counts?.failed ?? 0);
    }
    return { completed, failed };
  }

  /** Forgets minutes (and what was counted in them) at or before `oldest`, once per minute. */
  private prune(oldest: number): void {
    if (oldest <= this.prunedAt) return;
    this.prunedAt = oldest;
    for (const [key, minute] of this.counted) if (minute <= oldest) this.counted.delete(key);
    for (const byMinute of this.minutes.values()) {
      for (const minute of byMinute.keys()) if (minute <= oldest) byMinute.delete(minute);
    }
  }
}
