import { ChangeStream } from 'mongodb';
import type { WakeupDocument } from './records.ts';
import { RESYNC_MESSAGE } from './wakeup-publisher.ts';

const REOPEN_MIN_MS = 100;
const REOPEN_MAX_MS = 5_000;

/** What a subscription needs of its notifier. */
export interface WakeupStreams {
  /** A new change stream of the wake-up inserts (and of the invalidate that ends one for good). */
  watch(): ChangeStream<WakeupDocument>;
  /** Creates the wake-up collection again if it is gone (an invalidate follows its drop). */
  ensureCollection(): Promise<void>;
  /** How long a new stream may take to report its start before it counts as open anyway. */
  readonly openTimeoutMs: number;
  /** Tells the operator why a stream failed or could not open. */
  warn(error: unknown): void;
}

/** The end of a stream by an invalidate: its collection was dropped or renamed. */
export class StreamInvalidated extends Error {
  constructor() {
    super('the change stream was invalidated: its collection was dropped or renamed');
    this.name = 'StreamInvalidated';
  }
}

/**
 * One listener's change stream, reopened whenever it ends for good until the
 * listener unsubscribes.
 *
 * A stream ends for good on an `error` (the driver emits one only for what it
 * could not resume) or an `invalidate` event. Not on a `close` by itself: the
 * driver forwards its cursor's `close` both when it resumes after a resumable
 * error (a failover, a dropped connection: the stream goes on, missing
 * nothing) and just before the error of a real end. Taking every `close` for
 * an end turned each resumable blip into a reopen and a `'*'` (every waiter
 * woken, every event subscriber resynced). A `close` after which the stream
 * stays closed past twice the open timeout, with no error (which the driver
 * is not known to do), still counts as an end, so a subscriber never goes
 * deaf silently.
 *
 * A stream that cannot open, the first as any later one, is warned of and
 * retried with backoff; once one opens after a failure the listener gets
 * `'*'`: wake-ups may have been missed meanwhile.
 */
export class WakeupSubscription {
  private stream: ChangeStream<WakeupDocument> | null = null;
  private closed = false;
  private failures = 0;
  private warnedReason: string | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly streams: WakeupStreams,
    private readonly listener: (message: string) => void,
  ) {}

  /** Opens the first stream; resolves once it is open, or once its failure is warned of and its retry scheduled. */
  async start(): Promise<void> {
    try {
      await this.open();
    } catch (error) {
      this.failed(error);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const stream = this.stream;
    this.stream = null;
    await stream?.close().catch(() => undefined);
  }

  /**
   * Opens a stream; resolves once it has its resume token (its first, empty
   * batch: from then on no insert is missed) or after the open timeout.
   * Rejects if it ends first.
   */
  private open(): Promise<void> {
    const stream = this.streams.watch();
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const opened = () => {
        if (settled) return;
        settled = true;
        clearTimeout(openTimer);
        if (this.closed) void stream.close().catch(() => undefined);
        else this.stream = stream;
        resolve();
      };
      const ended = (error: unknown) => {
        if (settled) return this.lost(stream, error);
        settled = true;
        clearTimeout(openTimer);
        void stream.close().catch(() => undefined);
        reject(error);
      };
      const openTimer = setTimeout(opened, this.streams.openTimeoutMs);
      stream.once(ChangeStream.RESUME_TOKEN_CHANGED, opened);
      stream.on('change', (change) => {
        if (change.operationType === 'invalidate') return ended(new StreamInvalidated());
        if (change.operationType !== 'insert') return;
        const message = change.fullDocument.name;
        if (typeof message === 'string') this.listener(message);
      });
      stream.on('error', ended);
      stream.on('close', () => {
        const check = setTimeout(() => {
          if (stream.closed) ended(new Error('the change stream closed without an error and did not resume'));
        }, 2 * this.streams.openTimeoutMs);
        check.unref();
      });
    });
  }

  /** An open stream ended for good: warned of, and reopened. */
  private lost(stream: ChangeStream<WakeupDocument>, error: unknown): void {
    if (this.stream !== stream || this.closed) return;
    this.stream = null;
    void stream.close().catch(() => undefined);
    this.failed(error);
  }

  /** A stream ended or could not open: warned of (once per run of failures for one reason), and a reopen scheduled. */
  private failed(error: unknown): void {
    if (this.closed) return;
    const reason = error instanceof Error ? error.message : String(error);
    if (this.failures === 0 || reason !== this.warnedReason) this.streams.warn(error);
    this.warnedReason = reason;
    const delayMs = Math.min(REOPEN_MAX_MS, REOPEN_MIN_MS * 2 ** Math.min(this.failures, 16));
    this.failures += 1;
    this.timer = setTimeout(() => {
      this.streams
        .ensureCollection()
        .then(() => this.open())
        .then(
          () => {
            if (this.closed) return;
            this.failures = 0;
            this.listener(RESYNC_MESSAGE);
          },
          (reopenError: unknown) => this.failed(reopenError),
        );
    }, delayMs);
  }
}
