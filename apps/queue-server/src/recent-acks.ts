/**
 * The acks this server applied lately, by job id and lease token. A worker
 * sends an ack again when it never read the answer to the request that
 * carried it: a claim it aborted while that claim waited for work (as a
 * closing worker does), or a request lost in transit. The store then finds
 * the lease gone, because that ack ended it, and the worker would report a
 * recorded result as lost. Answering the repeat from this memory reports it
 * completed, as it is. Bounded: the oldest are forgotten first, and a repeat
 * that reaches another server is answered from the store alone.
 *
 * Kept as two generations, each up to half the capacity: when the newer one
 * fills, the older is dropped whole. Every operation costs the same however
 * long the server has run (deleting a `Set`'s oldest entries one by one does
 * not: each delete walks the holes the earlier ones left).
 */
export class RecentAcks {
  private newer = new Map<string, string>();
  private older = new Map<string, string>();
  private readonly generationSize: number;

  /** @param capacity the most acks remembered; at least half of them are always the latest. */
  constructor(capacity = 50_000) {
    this.generationSize = Math.max(1, Math.floor(capacity / 2));
  }

  remember(id: string, leaseToken: string): void {
    if (this.newer.size >= this.generationSize) {
      this.older = this.newer;
      this.newer = new Map();
    }
    this.newer.set(id, leaseToken);
  }

  /** Whether this server applied the ack of `id` under `leaseToken` (and still remembers it). */
  wasApplied(id: string, leaseToken: string): boolean {
    return (this.newer.get(id) ?? this.older.get(id)) === leaseToken;
  }
}
