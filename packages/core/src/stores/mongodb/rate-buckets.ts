import type { RateLedger } from '../shared/limited-claim.ts';

/** The most buckets a type's rate-limit state keeps, whatever its `rateLimit.max`. */
export const RATE_BUCKETS = 64;

/** Starts counted at one time: `[epoch ms, how many]`. */
export type RateBucket = [atMs: number, count: number];

/**
 * A rate limit's state on MongoDB: the type's recent starts as at most
 * `RATE_BUCKETS` buckets, oldest first, each a start time and how many jobs
 * started then. The starts of one claim share its `now`, so a bucket is a
 * claim, and with at most `RATE_BUCKETS` claims in a window the buckets are
 * the exact log of starts the other stores keep: the same answers, at most
 * `rateLimit.max` in any window of `rateLimit.perMs`, a start freeing its
 * place exactly `perMs` later. The document stays a few hundred bytes however
 * large `max` is (the log it replaces held up to `max` timestamps, past
 * 16 MiB at about a million, and was rewritten by every claim).
 *
 * Past `RATE_BUCKETS` claims in a window, the two buckets closest in time
 * are merged into the later one. Starts are only ever counted later than
 * they were, never earlier, so the limit is never exceeded; a merged start
 * frees its place up to the gap it was moved by later than the log would
 * (over 64 claims in one window, each gap is a small part of it). As in
 * the log, the latest `max` starts are kept however old they are, never only
 * those inside the latest start's window: a claim whose `now` is behind the
 * latest start (another server's clock, or a claim run again after a write
 * conflict with the `now` it was made with) still counts every start inside
 * its own window.
 */
export class RateBuckets implements RateLedger {
  private constructor(
    private readonly rate: { max: number; perMs: number } | null,
    private buckets: RateBucket[],
  ) {}

  /** The state stored (`rateBuckets`), or, for a document from before it, the log of starts it had. */
  static stored(
    rate: { max: number; perMs: number } | null,
    doc: { rateBuckets?: RateBucket[] | null; recentStarts?: number[] | null },
  ): RateBuckets {
    if (Array.isArray(doc.rateBuckets))
      return new RateBuckets(
        rate,
        doc.rateBuckets.map(([at, n]) => [at, n]),
      );
    const buckets = new RateBuckets(rate, []);
    for (const at of doc.recentStarts ?? []) buckets.add(1, Number(at));
    return buckets;
  }

  /** The buckets to store. */
  get state(): RateBucket[] {
    return this.buckets;
  }

  window(nowMs: number): { allowed: number; nextStartAt: Date | null } {
    if (this.rate === null) return { allowed: Number.POSITIVE_INFINITY, nextStartAt: null };
    const allowed = Math.max(0, this.rate.max - this.countedAt(nowMs));
    return { allowed, nextStartAt: allowed > 0 ? null : this.nextStartAfter(nowMs) };
  }

  started(leased: number, nowMs: number): Date | null {
    if (this.rate === null) return null;
    this.add(leased, nowMs);
    return this.countedAt(nowMs) >= this.rate.max ? this.nextStartAfter(nowMs) : null;
  }

  /** The starts a claim at `nowMs` counts: those after `nowMs - perMs`, later ones (another clock's) included. */
  private countedAt(nowMs: number): number {
    const since = nowMs - (this.rate?.perMs ?? 0);
    return this.buckets.reduce((sum, [at, n]) => (at > since ? sum + n : sum), 0);
  }

  /** When enough of the starts counted at `nowMs` have left the window for one more to start. */
  private nextStartAfter(nowMs: number): Date {
    const { max, perMs } = this.rate as { max: number; perMs: number };
    let counted = this.countedAt(nowMs);
    for (const [at, n] of this.buckets) {
      if (at <= nowMs - perMs) continue;
      counted -= n;
      if (counted < max) return new Date(at + perMs);
    }
    return new Date(nowMs + perMs);
  }

  /** Adds `count` starts at `atMs`, keeps the latest `max` of all starts, and merges down to `RATE_BUCKETS`. */
  private add(count: number, atMs: number): void {
    const same = this.buckets.find(([at]) => at === atMs);
    if (same) same[1] += count;
    else this.buckets.push([atMs, count]);
    this.buckets.sort((a, b) => a[0] - b[0]);
    this.keepLatest(this.rate?.max ?? 0);
    while (this.buckets.length > RATE_BUCKETS) this.mergeClosest();
  }

  /** Drops all but the latest `max` starts (the bucket that reaches `max` keeps only its share), as the log does. */
  private keepLatest(max: number): void {
    let kept = 0;
    for (let i = this.buckets.length - 1; i >= 0; i--) {
      const bucket = this.buckets[i] as RateBucket;
      if (kept + bucket[1] >= max) {
        bucket[1] = max - kept;
        this.buckets = this.buckets.slice(bucket[1] > 0 ? i : i + 1);
        return;
      }
      kept += bucket[1];
    }
  }

  /** Merges the two buckets closest in time into the later one. */
  private mergeClosest(): void {
    let closest = 1;
    for (let i = 2; i < this.buckets.length; i++) {
      const gap = (this.buckets[i] as RateBucket)[0] - (this.buckets[i - 1] as RateBucket)[0];
      const best = (this.buckets[closest] as RateBucket)[0] - (this.buckets[closest - 1] as RateBucket)[0];
      if (gap < best) closest = i;
    }
    const [earlier] = this.buckets.splice(closest - 1, 1) as [RateBucket];
    (this.buckets[closest - 1] as RateBucket)[1] += earlier[1];
  }
}
