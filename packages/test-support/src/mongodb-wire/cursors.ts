import { BSON, type Document, Long } from 'bson';
import { wireError } from './errors.ts';
import { MAX_BSON_OBJECT_SIZE } from './primary.ts';

/** A batch a cursor hands out. */
export interface Batch {
  docs: Document[];
  /** Whether the cursor is done (its id goes back as 0 and it is forgotten). */
  exhausted: boolean;
  postBatchResumeToken?: Document;
}

/** An open server cursor: `getMore` takes its next batch. */
export interface Cursor {
  readonly ns: string;
  readonly changeStream: boolean;
  next(batchSize: number | undefined, maxTimeMS: number | undefined, abandoned: Promise<void>): Promise<Batch>;
}

/** The server's default size of a cursor's first batch. */
export const DEFAULT_FIRST_BATCH = 101;

/** Takes documents from `docs` until `limit` of them or about 16 MiB, as the server fills a batch. */
export function takeBatch(docs: Document[], limit: number | undefined): Document[] {
  const batch: Document[] = [];
  let bytes = 0;
  while (docs.length > 0 && (limit === undefined || limit <= 0 || batch.length < limit)) {
    const size = BSON.calculateObjectSize(docs[0] as Document);
    if (batch.length > 0 && bytes + size > MAX_BSON_OBJECT_SIZE) break;
    bytes += size;
    batch.push(docs.shift() as Document);
  }
  return batch;
}

/** A cursor over documents already found. */
export class ArrayCursor implements Cursor {
  readonly changeStream = false;

  constructor(
    readonly ns: string,
    private readonly docs: Document[],
  ) {}

  async next(batchSize: number | undefined): Promise<Batch> {
    const docs = takeBatch(this.docs, batchSize);
    return { docs, exhausted: this.docs.length === 0 };
  }
}

/** The primary's open cursors by id. */
export class Cursors {
  private readonly open = new Map<number, Cursor>();
  private nextId = 1_000_001;

  /** Registers a cursor unless its first batch finished it; answers the `cursor` field of the reply. */
  reply(cursor: Cursor, batch: Batch): Document {
    let id = 0;
    if (!batch.exhausted) {
      id = this.nextId++;
      this.open.set(id, cursor);
    }
    return cursorField(cursor.ns, id, 'firstBatch', batch);
  }

  get(id: number): Cursor {
    const cursor = this.open.get(id);
    if (!cursor) throw wireError(43, `cursor id ${id} not found`);
    return cursor;
  }

  peek(id: number): Cursor | undefined {
    return this.open.get(id);
  }

  /** The `cursor` field of a `getMore` reply; an exhausted cursor is forgotten. */
  more(id: number, batch: Batch): Document {
    const cursor = this.get(id);
    if (batch.exhausted) this.open.delete(id);
    return cursorField(cursor.ns, batch.exhausted ? 0 : id, 'nextBatch', batch);
  }

  kill(id: number): boolean {
    return this.open.delete(id);
  }

  /** Forgets the cursors of a namespace (its collection was dropped). */
  killNamespace(ns: string): void {
    for (const [id, cursor] of this.open) if (cursor.ns === ns && !cursor.changeStream) this.open.delete(id);
  }
}

function cursorField(ns: string, id: number, field: 'firstBatch' | 'nextBatch', batch: Batch): Document {
  return {
    [field]: batch.docs,
    ...(batch.postBatchResumeToken ? { postBatchResumeToken: batch.postBatchResumeToken } : {}),
    id: Long.fromNumber(id),
    ns,
  };
}
