import { EventEmitter } from 'node:events';
import { Aggregator } from 'mingo';
import { MongoServerError } from 'mongodb';
import { cloneDoc, type Doc } from './mongodb-double-data.ts';

/** The server's error for a change stream whose resume point fell off the oplog: not resumable. */
const CHANGE_STREAM_HISTORY_LOST = 286;

/**
 * A change stream of one collection's inserts, through the `$match` stages of
 * its pipeline. As the driver's, it ends for good on a non-resumable error
 * (`fail`: `error`, then `close`), when the server refuses its aggregate
 * (`refuse`: `close`, forwarded from its cursor's clean-up, then `error`) and
 * after an invalidate event (`invalidate`: the event, where the pipeline lets
 * it through, then `close`).
 */
export class DoubleChangeStream extends EventEmitter {
  private closed = false;
  private sequence = 0;

  constructor(
    private readonly streams: Set<DoubleChangeStream>,
    private readonly dbName: string,
    private readonly collectionName: string,
    private readonly pipeline: Doc[] = [],
  ) {
    super();
    streams.add(this);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  announce(dbName: string, collectionName: string, doc: Doc): void {
    if (dbName !== this.dbName || collectionName !== this.collectionName) return;
    this.deliver({ operationType: 'insert', fullDocument: cloneDoc(doc) });
  }

  /** Ends the stream with a non-resumable server error (by default, its history lost from the oplog). */
  fail(
    error: Error = new MongoServerError({
      message: 'Resume of change stream was not possible, as the resume point may no longer be in the oplog.',
      code: CHANGE_STREAM_HISTORY_LOST,
      codeName: 'ChangeStreamHistoryLost',
    }),
  ): void {
    queueMicrotask(() => {
      if (this.closed) return;
      this.emit('error', error);
      void this.close();
    });
  }

  /** Ends the stream as it opens, the server having refused its aggregate with `error`. */
  refuse(error: Error): void {
    queueMicrotask(() => {
      if (this.closed) return;
      this.closed = true;
      this.streams.delete(this);
      this.emit('close');
      this.emit('error', error);
      this.removeAllListeners();
    });
  }

  /** Ends the stream as dropping or renaming its collection does. */
  invalidate(): void {
    this.deliver({ operationType: 'invalidate' });
    queueMicrotask(() => void this.close());
  }

  async close(): Promise<void> {
    this.streams.delete(this);
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
    this.removeAllListeners();
  }

  private deliver(event: Doc): void {
    this.sequence += 1;
    const change = { _id: { _data: `${this.collectionName}:${this.sequence}` }, ...event };
    const passed = new Aggregator(this.pipeline, {}).run([change]);
    if (passed.length > 0) queueMicrotask(() => !this.closed && this.emit('change', passed[0]));
  }
}
