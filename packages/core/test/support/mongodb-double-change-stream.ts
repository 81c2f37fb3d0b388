import { EventEmitter } from 'node:events';
import { cloneDoc, type Doc } from './mongodb-double-data.ts';

/** An insert-only change stream of one collection. */
export class DoubleChangeStream extends EventEmitter {
  constructor(
    private readonly streams: Set<DoubleChangeStream>,
    private readonly dbName: string,
    private readonly collectionName: string,
  ) {
    super();
    streams.add(this);
  }

  announce(dbName: string, collectionName: string, doc: Doc): void {
    if (dbName !== this.dbName || collectionName !== this.collectionName) return;
    const change = { _id: { _data: String(doc._id) }, operationType: 'insert', fullDocument: cloneDoc(doc) };
    queueMicrotask(() => this.emit('change', change));
  }

  async close(): Promise<void> {
    this.streams.delete(this);
    this.removeAllListeners();
  }
}
