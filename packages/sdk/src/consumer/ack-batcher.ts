import type { QueueApi } from '../transport.ts';
import { retrying } from './retry.ts';

/** A completion waiting to reach the server. */
export interface PendingAck {
  id: string;
  leaseToken: string;
  /** The attempt the completion ends (1-based). */
  attempt: number;
  result: unknown;
  giveUpAt: number;
  /** Sent once already, with no answer read: the server may have recorded it (see `restore`). */
  inDoubt?: boolean;
  settle: (ok: boolean) => void;
  fail: (error: unknown) => void;
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

  constructor(
    private readonly call: <T>(run: (api: QueueApi) => Promise<T>) => Promise<T>,
    private readonly maxBatch: number,
  ) {}

  /**
   * Resolves to `true` when the job was completed, `false` when its lease was
   * already lost. Retries through outages until `giveUpAt` (epoch ms).
   */
  complete(
    lease: { id: string; leaseToken: string; attempt: number },
    result: unknown,
    giveUpAt: number,
  ): Promise<boolean> {
    const { id, leaseToken, attempt } = lease;
    return new Promise((settle, fail) => {
      this.pending.push({ id, leaseToken, attempt, result, giveUpAt, settle, fail });
      this.schedule();
    });
  }

  /** Hands up to `maxBatch` waiting completions to a claim that will carry them. */
  take(): PendingAck[] {
    return this.pending.splice(0, this.maxBatch);
  }

  /** Settles completions a claim carried, from the server's outcomes. */
  settle(acks: readonly PendingAck[], completedIds: readonly string[]): void {
    if (acks.every((ack) => !ack.inDoubt)) {
      const ok = new Set(completedIds);
      for (const ack of acks) ack.settle(ok.has(ack.id));
      return;
    }
    this.track(this.settleChecked(acks, completedIds));
  }

  /**
   * Puts back completions whose claim failed in transit, or was aborted while it waited for work (a closing
   * worker): they go out on their own, retried. The server may have recorded them already, and then
   * answers that their leases are gone; such an answer is checked against the job (see `confirmed`).
   */
  restore(acks: readonly PendingAck[]): void {
    for (const ack of acks) ack.inDoubt = true;
    this.pending.unshift(...acks);
    this.schedule();
  }

  /** Sends everything waiting and resolves once every completion has an outcome. */
  async drain(): Promise<void> {
    while (this.pending.length > 0 || this.sending.size > 0) {
      this.flush();
      await Promise.allSettled([...this.sending]);
    }
  }

  /**
   * Whether a completion sent before, whose lease the server now reports gone, was recorded the first
   * time: the job is completed in the same attempt (a worker that claimed it after the lease expired
   * would have started another).
   */
  private async confirmed(ack: PendingAck): Promise<boolean> {
    try {
      const status = await this.call((api) => api.jobs.get.query({ id: ack.id }));
      return status.state === 'completed' && status.attempts === ack.attempt;
    } catch {
      return false;
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
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      const giveUpAt = Math.min(...batch.map((a) => a.giveUpAt));
      const items = batch.map(({ id, leaseToken, result }) => ({ id, leaseToken, result }));
      const sent = retrying(() => this.call((api) => api.consumer.complete.mutate({ items })), giveUpAt).then(
        (outcomes) =>
          this.settleChecked(
            batch,
            outcomes.filter((o) => o.ok).map((o) => o.id),
          ),
        (error: unknown) => {
          for (const ack of batch) ack.fail(error);
        },
      );
      this.track(sent);
    }
  }

  /** Settles `acks` from the server's outcomes, confirming those in doubt that it reports not completed. */
  private async settleChecked(acks: readonly PendingAck[], completedIds: readonly string[]): Promise<void> {
    const ok = new Set(completedIds);
    await Promise.all(
      acks.map(async (ack) => ack.settle(ok.has(ack.id) || (ack.inDoubt === true && (await this.confirmed(ack))))),
    );
  }

  /** Keeps `work` among what `drain` waits for. */
  private track(work: Promise<void>): void {
    this.sending.add(work);
    work.finally(() => this.sending.delete(work));
  }
}
