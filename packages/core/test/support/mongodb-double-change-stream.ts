import { EventEmitter } from 'node:events';
import { cloneDoc, type Doc } from '@workq/test-support';
import { Aggregator } from 'mingo';
import { MongoServerError } from 'mongodb';

/** The server's error for a change stream whose resume point fell off the oplog: not resumable. */
const CHANGE_STREAM_HISTORY_LOST = 286;

/**
 * A change stream of one collection's inserts, through the `$match` stages of
 * its pipeline. As the driver's, it ends for good on a non-resumable error,
 * in the stream or as the server refuses its aggregate (`fail`, `refuse`:
 * `close`, forwarded from its cursor's clean-up, then `error`), and after an
 * invalidate event (`invalidate`: the event, where the pipeline lets it
 * through, then `close`). A resumable error (`resume`) is no end: the driver
 * forwards the old cursor's `close`, opens a new one from the resume token
 * and goes on, missing nothing.
 */
export class DoubleChangeStream extends EventEmitter {
  private ended = false;
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
    return this.ended;
  }

  /** As the driver's `ChangeStream.closed`: ended for good (a resumed stream is open again). */
  get closed(): boolean {
    return this.isClosed;
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
    this.refuse(error);
  }

  /** Ends the stream as it opens, the server having refused its aggregate with `error`. */
  refuse(error: Error): void {
    queueMicrotask(() => {
      if (this.ended) return;
      this.ended = true;
      this.streams.delete(this);
      this.emit('close');
      this.emit('error', error);
      this.removeAllListeners();
    });
  }

  /** A resumable error (a failover, a dropped connection), which the driver resumes from: `close`, and it goes on. */
  resume(): void {
    queueMicrotask(() => !this.ended && this.emit('close'));
  }

  /** Ends the stream as dropping or renaming its collection does. */
  invalidate(): void {
    this.deliver({ operationType: 'invalidate' });
    queueMicrotask(() => void this.close());
  }

  async close(): Promise<void> {
    this.streams.delete(this);
    if (this.ended) return;
    this.ended = true;
    this.emit('close');
    this.removeAllListeners();
  }

  private deliver(event: Doc): void {
    this.sequence += 1;
    const change = { _id: { _data: `${this.collectionName}:${this.sequence}` }, ...event };
    const passed = new Aggregator(this.pipeline, {}).run([change]);
    if (passed.length > 0) queueMicrotask(() => !this.ended && this.emit('change', passed[0]));
  }
}
