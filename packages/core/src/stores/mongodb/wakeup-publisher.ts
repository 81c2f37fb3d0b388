/** The message that tells every subscriber wake-ups may have been missed: a resync. */
export const RESYNC_MESSAGE = '*';
/** Messages sent in one insert at most. */
const BATCH_MESSAGES = 100;
/** Messages waiting while an insert fails at most; past it the oldest are dropped (the resync covers them). */
const MAX_QUEUED_MESSAGES = 1_000;
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;

interface Queued {
  message: string;
  sent: () => void;
  failed: (error: unknown) => void;
}

export interface WakeupPublisherParts {
  /** Inserts the messages, in this order, as one ordered write; rejects when any was not written. */
  insert(messages: string[]): Promise<void>;
  /** Tells the operator a publish failed, with the reason. */
  warn(error: unknown): void;
}

/**
 * Sends wake-up messages one write at a time, in the order `publish` was
 * called: two writes in flight at once can be applied, and so delivered, in
 * either order, and a message such as "job X finished" must not overtake the
 * one before it. Messages that arrive while a write is in flight go out
 * together in the next.
 *
 * A failed write is not lost silently: its callers are told (their promises
 * reject), the operator is warned once per run of failures, and a resync
 * (`'*'`) is written before any later message, retried with backoff until it
 * is, so every subscriber learns that wake-ups may have been missed and reads
 * afresh. A subscriber that reads afresh on the resync has everything the
 * lost messages would have said, since it reads after they were meant.
 */
export class WakeupPublisher {
  private readonly queue: Queued[] = [];
  private resyncDue = false;
  private failures = 0;
  private draining = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private wakeRetry: (() => void) | undefined;

  constructor(private readonly parts: WakeupPublisherParts) {}

  /** Resolves once `message` is written, after every message published before it; rejects when its write failed. */
  publish(message: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the notifier is closed'));
    return new Promise<void>((sent, failed) => {
      this.queue.push({ message, sent, failed });
      if (this.queue.length > MAX_QUEUED_MESSAGES) {
        this.resyncDue = true;
        this.queue.shift()?.failed(new Error('too many wake-ups waiting while MongoDB could not take them'));
      }
      void this.drain();
    });
  }

  /** Stops: waiting messages fail, and no resync is retried any more. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.wakeRetry?.();
    for (const queued of this.queue.splice(0)) queued.failed(new Error('the notifier is closed'));
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (!this.closed && (this.resyncDue || this.queue.length > 0)) {
        if (this.resyncDue) {
          if ((await this.write([RESYNC_MESSAGE])) === undefined) this.resyncDue = false;
          else await this.pause();
          continue;
        }
        const batch = this.queue.splice(0, BATCH_MESSAGES);
        const error = await this.write(batch.map((queued) => queued.message));
        for (const queued of batch) {
          if (error === undefined) queued.sent();
          else queued.failed(error);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** Writes `messages`; resolves to the error when that failed (counted, warned of, and a resync made due). */
  private async write(messages: string[]): Promise<unknown> {
    try {
      await this.parts.insert(messages);
      this.failures = 0;
      return undefined;
    } catch (error) {
      this.failed(error);
      return error ?? new Error('the wake-up was not written');
    }
  }

  private failed(error: unknown): void {
    if (this.failures === 0) this.parts.warn(error);
    this.failures += 1;
    this.resyncDue = true;
  }

  /** Waits out the backoff before the next try of the resync, or until closed. */
  private pause(): Promise<void> {
    const delayMs = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(this.failures - 1, 16));
    return new Promise<void>((resume) => {
      this.wakeRetry = resume;
      this.retryTimer = setTimeout(resume, delayMs);
    });
  }
}
