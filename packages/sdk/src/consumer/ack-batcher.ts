import { retrying } from '../retry.ts';
import type { Call } from '../transport.ts';

/** A completion waiting to reach the server. */
export interface PendingAck {
  id: string;
  leaseToken: string;
  result: unknown;
  giveUpAt: number;
}

/**
 * What became of completions, told once per completion: one pair of functions for every job, so a job's
 * completion costs no promise or closures of its own.
 */
export interface AckOutcomes {
  /** The job's lease was already lost when its completion arrived: its result was not recorded. */
  lost(ack: PendingAck): void;
  /** The completion could not be sent before its `giveUpAt`. */
  failed(ack: PendingAck, error: unknown): void;
}

/**
 * Collects completions and sends them in batches: riding along with the
 * worker's next claim when one goes out at once, otherwise as one request at
 * the end of the current turn of the event loop. Either way the server writes
 * a batch in one store statement.
 */
export class AckBatcher {
  private pending: PendingAck[] = [];
  private scheduled = false;
  private readonly sending = new Set<Promise<void>>();

  /** `name`: the job type of the acks, which labels the server's handler duration metric. */
  constructor(
    private readonly call: Call,
    private readonly maxBatch: number,
    private readonly outcomes: AckOutcomes,
    private readonly name?: string,
  ) {}

  /**
   * Queues the completion of held job `id`; `outcomes` hears if its lease was already lost, or if it could
   * not be sent. Retries through outages until `giveUpAt` (epoch ms).
   */
  complete(id: string, leaseToken: string, result: unknown, giveUpAt: number): void {
    this.pending.push({ id, leaseToken, result, giveUpAt });
    this.schedule();
  }

  /**
   * Hands up to `maxBatch` waiting completions to a claim that will carry them. The claim's answer names the
   * jobs it completed, not the leases, so it carries one lease of a job at most; another (a lease that expired
   * while this worker ran the job, and the one it was claimed again under) goes out in a request of its own,
   * whose answer is per lease.
   */
  take(): PendingAck[] {
    const taken: PendingAck[] = [];
    const ids = new Set<string>();
    const left: PendingAck[] = [];
    let heldBack = false;
    for (const ack of this.pending) {
      const again = ids.has(ack.id);
      heldBack ||= again;
      if (taken.length < this.maxBatch && !again) {
        taken.push(ack);
        ids.add(ack.id);
      } else left.push(ack);
    }
    this.pending = left;
    // A lease held back goes out on its own, as if no claim had come.
    if (heldBack) this.schedule();
    return taken;
  }

  /** Settles completions a claim carried, from the server's outcomes. */
  settle(acks: readonly PendingAck[], completedIds: readonly string[]): void {
    const ok = new Set(completedIds);
    for (const ack of acks) if (!ok.has(ack.id)) this.outcomes.lost(ack);
  }

  /** Puts back completions whose claim failed in transit; they go out on their own, retried. */
  restore(acks: readonly PendingAck[]): void {
    this.pending.unshift(...acks);
    this.schedule();
  }

  /**
   * Sends completions a claim carried but the server did not take (a result
   * it cannot store) in a request of their own, now: that request's answer
   * says why (e.g. `PAYLOAD_TOO_LARGE`), and the next claim does not carry
   * them again.
   */
  resend(acks: readonly PendingAck[]): void {
    if (acks.length > 0) this.send([...acks]);
  }

  /** Sends everything waiting and resolves once every completion has an outcome. */
  async drain(): Promise<void> {
    while (this.pending.length > 0 || this.sending.size > 0) {
      this.flush();
      await Promise.allSettled([...this.sending]);
    }
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      this.flush();
    }, 0);
  }

  private flush(): void {
    while (this.pending.length > 0) this.send(this.pending.splice(0, this.maxBatch));
  }

  private send(batch: PendingAck[]): void {
    const giveUpAt = Math.min(...batch.map((a) => a.giveUpAt));
    const items = batch.map(({ id, leaseToken, result }) => ({ id, leaseToken, result }));
    const sent = retrying(
      () => this.call((api, signal) => api.consumer.complete.mutate({ items, name: this.name }, { signal })),
      giveUpAt,
    ).then(
      // One outcome per item, in order: a job sent under two leases is settled per lease.
      (outcomes) => {
        for (const [index, ack] of batch.entries()) if (outcomes[index]?.ok !== true) this.outcomes.lost(ack);
      },
      (error: unknown) => {
        for (const ack of batch) this.outcomes.failed(ack, error);
      },
    );
    this.sending.add(sent);
    sent.finally(() => this.sending.delete(sent));
  }
}
