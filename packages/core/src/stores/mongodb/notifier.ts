import { ChangeStream, type Collection, type Db, MongoServerError } from 'mongodb';
import type { StoreNotifier } from '../../engine/store.ts';
import type { WakeupDocument } from './documents.ts';
import { toWorkqError } from './errors.ts';

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

/** Creates the small capped collection wake-ups go through, if it does not exist. */
export async function ensureWakeupCollection(db: Db, name: string): Promise<void> {
  try {
    await db.createCollection(name, { capped: true, size: 1_048_576, max: 1000 });
  } catch (error) {
    if (!(error instanceof MongoServerError && error.code === NAMESPACE_EXISTS)) throw error;
  }
}

/**
 * Cross-process wake-ups over MongoDB: `publish` inserts a job name into a
 * capped collection; each subscriber watches that collection's inserts with
 * a change stream. A missed wake-up only delays a job until the next poll.
 */
export class ChangeStreamNotifier implements StoreNotifier {
  private readonly streams = new Set<ChangeStream<WakeupDocument>>();

  constructor(
    private readonly wakeups: Collection<WakeupDocument>,
    private readonly openTimeoutMs: number,
    private readonly hosts: string,
  ) {}

  async publish(name: string): Promise<void> {
    try {
      await this.wakeups.insertOne({ name: String(name) });
    } catch (error) {
      throw toWorkqError(error, this.hosts, 'publish');
    }
  }

  async subscribe(listener: (name: string) => void): Promise<() => Promise<void>> {
    try {
      return await this.watch(listener);
    } catch (error) {
      throw toWorkqError(error, this.hosts, 'subscribe');
    }
  }

  private async watch(listener: (name: string) => void): Promise<() => Promise<void>> {
    const stream = this.wakeups.watch<WakeupDocument>([{ $match: { operationType: 'insert' } }]);
    this.streams.add(stream);
    const opened = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, this.openTimeoutMs);
      // The stream's first (empty) batch sets its resume token: from then on, no insert is missed.
      stream.once(ChangeStream.RESUME_TOKEN_CHANGED, () => {
        clearTimeout(timer);
        resolve();
      });
      stream.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    stream.on('change', (change) => {
      if (change.operationType !== 'insert') return;
      const name = change.fullDocument.name;
      if (typeof name === 'string') listener(name);
    });
    // After opening, a failed stream only costs wake-ups: consumers still poll.
    stream.on('error', () => this.streams.delete(stream));
    try {
      await opened;
    } catch (error) {
      this.streams.delete(stream);
      await stream.close();
      throw error;
    }
    return async () => {
      this.streams.delete(stream);
      await stream.close();
    };
  }

  /** Closes every open subscription. */
  async close(): Promise<void> {
    const streams = [...this.streams];
    this.streams.clear();
    await Promise.allSettled(streams.map((stream) => stream.close()));
  }
}
