import type { QueueApi } from '../transport.ts';
import { retrying } from './retry.ts';

interface PendingAck {
  id: string;
  leaseToken: string;
  result: unknown;
  giveUpAt: number;
  settle: (ok: boolean) => void;
  fail: (error: unknown) => void;
}

/**
 * Collects completions made in the same turn of the event loop and sends
 * them as one request (one store statement on the server).
 */
export class AckBatcher {
  private pending: PendingAck[] = [];
  private scheduled = false;

  constructor(
    private readonly call: <T>(run: (api: QueueApi) => Promise<T>) => Promise<T>,
    private readonly maxBatch: number,
  ) {}

  /**
   * Resolves to `true` when the job was completed, `false` when its lease was
   * already lost. Retries through outages until `giveUpAt` (the lease's end).
   */
  complete(id: string, leaseToken: string, result: unknown, giveUpAt: number): Promise<boolean> {
    return new Promise((settle, fail) => {
      this.pending.push({ id, leaseToken, result, giveUpAt, settle, fail });
      if (this.pending.length >= this.maxBatch) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setTimeout(() => this.flush(), 0);
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending.splice(0, this.maxBatch);
    if (batch.length === 0) return;
    const giveUpAt = Math.min(...batch.map((a) => a.giveUpAt));
    const items = batch.map(({ id, leaseToken, result }) => ({ id, leaseToken, result }));
    retrying(() => this.call((api) => api.consumer.complete.mutate({ items })), giveUpAt).then(
      (outcomes) => {
        const ok = new Set(outcomes.filter((o) => o.ok).map((o) => o.id));
        for (const ack of batch) ack.settle(ok.has(ack.id));
      },
      (error: unknown) => {
        for (const ack of batch) ack.fail(error);
      },
    );
    if (this.pending.length > 0) this.flush();
  }
}
