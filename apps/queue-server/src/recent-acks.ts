/**
 * The acks this server applied lately, by job id and lease token. A worker
 * sends an ack again when it never read the answer to the request that
 * carried it: a claim it aborted while that claim waited for work (as a
 * closing worker does), or a request lost in transit. The store then finds
 * the lease gone, because that ack ended it, and the worker would report a
 * recorded result as lost. Answering the repeat from this memory reports it
 * completed, as it is. Bounded: the oldest are forgotten first, and a repeat
 * that reaches another server is answered from the store alone.
 */
export class RecentAcks {
  private readonly keys = new Set<string>();

  constructor(private readonly capacity = 50_000) {}

  remember(id: string, leaseToken: string): void {
    this.keys.add(keyOf(id, leaseToken));
    if (this.keys.size > this.capacity) this.keys.delete(this.keys.values().next().value as string);
  }

  /** Whether this server applied the ack of `id` under `leaseToken` (and still remembers it). */
  wasApplied(id: string, leaseToken: string): boolean {
    return this.keys.has(keyOf(id, leaseToken));
  }
}

function keyOf(id: string, leaseToken: string): string {
  return `${id}\u0000${leaseToken}`;
}
