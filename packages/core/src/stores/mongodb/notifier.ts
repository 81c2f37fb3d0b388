import { ChangeStream, type Collection, type Db, MongoServerError } from 'mongodb';
import type { ClosableNotifier } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import type { WakeupDocument } from './documents.ts';
import { toWorkqError } from './errors.ts';

const NAMESPACE_EXISTS = 48;
const REOPEN_MIN_MS = 100;
const REOPEN_MAX_MS = 5_000;

/** What the store needs to know of the server it opened. */
export interface ServerDescription {
  /** A replica set member (index builds take a commit quorum). */
  replicaSet: boolean;
  /** A replica set member or mongos: change streams run. */
  changeStreams: boolean;
}

export async function describeServer(db: Db): Promise<ServerDescription> {
  const hello = await db.command({ hello: 1 });
  const replicaSet = typeof hello.setName === 'string';
  return { replicaSet, changeStreams: replicaSet || hello.msg === 'isdbgrid' };
}

/**
 * Cross-process wake-ups over MongoDB: `publish` inserts a message into a
 * small capped collection; each subscriber watches that collection's inserts
 * with a change stream. The driver resumes a stream by itself after a
 * resumable error; a stream that ends for good (a non-resumable error, or an
 * invalidate when the collection is dropped or renamed) is reopened, with
 * backoff and the collection recreated, and the listener then receives `'*'`:
 * wake-ups may have been missed. A missed wake-up only delays a job until the
 * next poll.
 */
export class ChangeStreamNotifier implements ClosableNotifier {
  private readonly subscriptions = new Set<Subscription>();
  private readonly wakeups: Collection<WakeupDocument>;

  constructor(
    private readonly db: Db,
    private readonly collectionName: string,
    /** How long a new stream may take to report its start before it counts as open anyway. */
    readonly openTimeoutMs: number,
    private readonly hosts: string,
  ) {
    this.wakeups = db.collection<WakeupDocument>(collectionName);
  }

  /** Creates the capped collection wake-ups go through, if it does not exist. */
  async ensureCollection(): Promise<void> {
    try {
      await this.db.createCollection(this.collectionName, { capped: true, size: 1_048_576, max: 1000 });
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === NAMESPACE_EXISTS)) throw error;
    }
  }

  async publish(name: string): Promise<void> {
    try {
      await this.wakeups.insertOne({ name: String(name) });
    } catch (error) {
      throw toWorkqError(error, this.hosts, 'publish');
    }
  }

  async subscribe(listener: (name: string) => void): Promise<() => Promise<void>> {
    const subscription = new Subscription(this, listener);
    try {
      await subscription.open();
    } catch (error) {
      throw this.streamFailure(error);
    }
    this.subscriptions.add(subscription);
    return async () => {
      this.subscriptions.delete(subscription);
      await subscription.close();
    };
  }

  /**
   * A change stream of the wake-up inserts, and of the invalidate that ends a
   * stream for good. Read at `majority`, the only read concern the server's
   * `$changeStream` stage accepts (any other fails with `InvalidOptions`):
   * the driver would otherwise copy the store's `local` from the database
   * handle into the aggregate.
   */
  watch(): ChangeStream<WakeupDocument> {
    return this.wakeups.watch<WakeupDocument>([{ $match: { operationType: { $in: ['insert', 'invalidate'] } } }], {
      readConcern: { level: 'majority' },
    });
  }

  /** A stream's failure as the operator needs it: the server's reason, named. */
  streamFailure(error: unknown): WorkqError {
    const reason =
      error instanceof MongoServerError
        ? `${error.codeName ?? 'error'} (${error.code}): ${error.message}`
        : error instanceof Error
          ? error.message
          : String(error);
    const retryable = toWorkqError(error, this.hosts, 'subscribe').retryable;
    return new WorkqError('UNAVAILABLE', `The wake-up change stream on MongoDB at ${this.hosts} failed: ${reason}`, {
      retryable,
      cause: error,
    });
  }

  /** Closes every subscription. */
  async close(): Promise<void> {
    const open = [...this.subscriptions];
    this.subscriptions.clear();
    await Promise.allSettled(open.map((subscription) => subscription.close()));
  }
}

/** One listener's change stream, reopened whenever it ends until the listener unsubscribes. */
class Subscription {
  private stream: ChangeStream<WakeupDocument> | null = null;
  private closed = false;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly notifier: ChangeStreamNotifier,
    private readonly listener: (name: string) => void,
  ) {}

  /**
   * Opens a stream; resolves once the stream has its resume token (its first,
   * empty batch: from then on no insert is missed) or after the open timeout.
   * Rejects if the stream ends first.
   */
  open(): Promise<void> {
    const stream = this.notifier.watch();
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const opened = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (this.closed) void stream.close().catch(() => undefined);
        else this.stream = stream;
        resolve();
      };
      const ended = (error?: unknown) => {
        if (settled) return this.lost(stream);
        settled = true;
        clearTimeout(timer);
        void stream.close().catch(() => undefined);
        reject(error ?? new Error('the change stream ended as it opened'));
      };
      const timer = setTimeout(opened, this.notifier.openTimeoutMs);
      stream.once(ChangeStream.RESUME_TOKEN_CHANGED, opened);
      stream.on('change', (change) => {
        if (change.operationType === 'invalidate') return ended();
        if (change.operationType !== 'insert') return;
        const name = change.fullDocument.name;
        if (typeof name === 'string') this.listener(name);
      });
      stream.on('error', ended);
      // The driver forwards its cursor's `close` before the error that ended it: while opening, wait for that error.
      stream.on('close', () => settled && ended());
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const stream = this.stream;
    this.stream = null;
    await stream?.close().catch(() => undefined);
  }

  private lost(stream: ChangeStream<WakeupDocument>): void {
    if (this.stream !== stream || this.closed) return;
    this.stream = null;
    void stream.close().catch(() => undefined);
    this.reopenLater();
  }

  private reopenLater(): void {
    const delayMs = Math.min(REOPEN_MAX_MS, REOPEN_MIN_MS * 2 ** this.failures);
    this.failures += 1;
    this.timer = setTimeout(() => {
      this.notifier
        .ensureCollection()
        .then(() => this.open())
        .then(
          () => {
            if (this.closed) return;
            this.failures = 0;
            this.listener('*');
          },
          () => {
            if (!this.closed) this.reopenLater();
          },
        );
    }, delayMs);
  }
}
