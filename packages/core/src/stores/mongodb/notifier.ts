import type { BulkWriteOptions, ChangeStream, Collection, Db } from 'mongodb';
import { MongoServerError } from 'mongodb';
import type { ClosableNotifier } from '../../engine/store.ts';
import { WorkqError } from '../../errors.ts';
import { type Abortable, withCallLimit } from './call-limit.ts';
import { toWorkqError } from './errors.ts';
import type { WakeupDocument } from './records.ts';
import { WakeupPublisher } from './wakeup-publisher.ts';
import { StreamInvalidated, WakeupSubscription } from './wakeup-subscription.ts';

const NAMESPACE_EXISTS = 48;

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

/** Where the notifier tells the operator of a failed stream or publish; the store passes Node's warnings. */
export type NotifierWarn = (warning: WorkqError) => void;

/**
 * Cross-process wake-ups over MongoDB: `publish` inserts messages into a
 * small capped collection, in order (see `WakeupPublisher`); each subscriber
 * watches that collection's inserts with a change stream (see
 * `WakeupSubscription`). The driver resumes a stream by itself after a
 * resumable error; a stream that ends for good (a non-resumable error, or an
 * invalidate when the collection is dropped or renamed) or cannot open is
 * warned of and reopened, with backoff and the collection recreated, and the
 * listener then receives `'*'`: wake-ups may have been missed. A missed
 * wake-up only delays a job until the next poll, so a stream that cannot open
 * fails no start-up.
 */
export class ChangeStreamNotifier implements ClosableNotifier {
  private readonly subscriptions = new Set<WakeupSubscription>();
  private readonly wakeups: Collection<WakeupDocument>;
  private readonly publisher: WakeupPublisher;

  constructor(
    private readonly db: Db,
    private readonly collectionName: string,
    /** How long a new stream may take to report its start before it counts as open anyway. */
    readonly openTimeoutMs: number,
    private readonly hosts: string,
    private readonly warnOperator: NotifierWarn,
    /** How long a wake-up's insert may take before it is abandoned (see `withCallLimit`). */
    callLimitMs: number,
  ) {
    this.wakeups = db.collection<WakeupDocument>(collectionName);
    this.publisher = new WakeupPublisher({
      insert: async (messages) => {
        const docs = messages.map((message) => ({ name: message }));
        await withCallLimit(callLimitMs, (signal) => {
          const options: Abortable<BulkWriteOptions> = { ordered: true, signal };
          return this.wakeups.insertMany(docs, options);
        });
      },
      warn: (error) =>
        this.warnOperator(
          new WorkqError(
            'UNAVAILABLE',
            `A wake-up could not be published to MongoDB at ${this.hosts} (${reasonOf(error)}); the other servers get a resync ('*') once one can be.`,
            { cause: error },
          ),
        ),
    });
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
      await this.publisher.publish(String(name));
    } catch (error) {
      throw toWorkqError(error, this.hosts, 'publish');
    }
  }

  /** Never rejects for a stream that cannot open: that is warned of and retried (see `WakeupSubscription`). */
  async subscribe(listener: (name: string) => void): Promise<() => Promise<void>> {
    const subscription = new WakeupSubscription(
      {
        watch: () => this.watch(),
        ensureCollection: () => this.ensureCollection(),
        openTimeoutMs: this.openTimeoutMs,
        warn: (error) => this.warnOperator(this.streamFailure(error)),
      },
      listener,
    );
    this.subscriptions.add(subscription);
    await subscription.start();
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
    const retryable = error instanceof StreamInvalidated || toWorkqError(error, this.hosts, 'subscribe').retryable;
    return new WorkqError(
      'UNAVAILABLE',
      `The wake-up change stream on MongoDB at ${this.hosts} failed: ${reasonOf(error)}. It is reopened with backoff; until then other servers' wake-ups reach this one by its polls.`,
      { retryable, cause: error },
    );
  }

  /** Closes every subscription, and stops publishing. */
  async close(): Promise<void> {
    this.publisher.close();
    const open = [...this.subscriptions];
    this.subscriptions.clear();
    await Promise.allSettled(open.map((subscription) => subscription.close()));
  }
}

/** A driver error's reason: a server error's code name, code and message. */
function reasonOf(error: unknown): string {
  if (error instanceof MongoServerError) return `${error.codeName ?? 'error'} (${error.code}): ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
