import type { Document } from 'bson';
import { Aggregator } from 'mingo';
import type { Batch, Cursor } from './cursors.ts';
import { DEFAULT_FIRST_BATCH } from './cursors.ts';
import { cloneDoc, type Doc } from './data.ts';
import { wireError } from './errors.ts';
import { type ChangeEntry, clusterTime, type PrimaryState } from './primary.ts';

/** How long an awaitData `getMore` waits for a change without a `maxTimeMS`, as the server does. */
const DEFAULT_AWAIT_MS = 1000;

/** A resume token for an oplog position; `invalidate` marks the invalidate event that follows it. */
export function resumeToken(seq: number, invalidate = false): Document {
  return { _data: `82${seq.toString(16).padStart(16, '0')}${invalidate ? '01' : '00'}` };
}

function positionOf(token: unknown): { seq: number; invalidate: boolean } {
  const data = (token as { _data?: unknown } | undefined)?._data;
  if (typeof data !== 'string' || !/^82[0-9a-f]{16}0[01]$/.test(data)) {
    throw wireError(2, `KeyString format error: resume token ${JSON.stringify(token)} is not one this server issued`);
  }
  return { seq: Number.parseInt(data.slice(2, 18), 16), invalidate: data.endsWith('01') };
}

/** What a `$changeStream` stage watches: one collection, one database, or the cluster. */
export interface WatchedNamespace {
  db: string | undefined;
  coll: string | undefined;
}

/**
 * Opens a change stream's cursor from the `$changeStream` stage's options:
 * from now, or after a resume token (`resumeAfter`, `startAfter`: the latter
 * also after an invalidate), or from an operation time. A point older than
 * the oplog keeps fails with `ChangeStreamHistoryLost` (286).
 */
export function openChangeStream(
  primary: PrimaryState,
  ns: string,
  watched: WatchedNamespace,
  stage: Document,
  pipeline: Document[],
): ChangeStreamCursor {
  let after = primary.lastSeq;
  const token = stage.resumeAfter ?? stage.startAfter;
  if (token !== undefined) {
    const position = positionOf(token);
    if (position.invalidate && stage.startAfter === undefined) {
      throw wireError(
        260,
        'Attempting to resume a change stream using an invalidate token is not allowed; use startAfter instead',
      );
    }
    after = position.seq;
  } else if (stage.startAtOperationTime !== undefined) {
    after = Number((stage.startAtOperationTime as { i?: unknown }).i ?? 0) - 1;
  }
  const cursor = new ChangeStreamCursor(primary, ns, watched, after, pipeline, stage.fullDocument === 'updateLookup');
  cursor.checkHistory();
  return cursor;
}

/** A tailable, awaitData cursor over the oplog, through the stages that follow `$changeStream`. */
export class ChangeStreamCursor implements Cursor {
  readonly changeStream = true;
  private invalidated = false;

  constructor(
    private readonly primary: PrimaryState,
    readonly ns: string,
    private readonly watched: WatchedNamespace,
    /** The oplog position last handed out or scanned. */
    private position: number,
    private readonly pipeline: Document[],
    private readonly lookup: boolean,
  ) {}

  /** The server's refusal when the stream's position has fallen off the oplog. */
  checkHistory(): void {
    if (this.position + 1 >= this.primary.oplogStart) return;
    throw wireError(
      286,
      'Executor error during getMore :: caused by :: Resume of change stream was not possible, as the resume point may no longer be in the oplog.',
    );
  }

  /** The first batch: what is there already, without waiting. */
  async first(batchSize: number | undefined): Promise<Batch> {
    return this.scan(batchSize ?? DEFAULT_FIRST_BATCH);
  }

  async next(batchSize: number | undefined, maxTimeMS: number | undefined, abandoned: Promise<void>): Promise<Batch> {
    this.checkHistory();
    const batch = this.scan(batchSize);
    if (batch.docs.length > 0 || batch.exhausted) return batch;
    await Promise.race([this.primary.awaitOplog(maxTimeMS ?? DEFAULT_AWAIT_MS), abandoned]);
    this.checkHistory();
    return this.scan(batchSize);
  }

  private scan(batchSize: number | undefined): Batch {
    const docs: Document[] = [];
    const limit = batchSize && batchSize > 0 ? batchSize : Number.POSITIVE_INFINITY;
    let full = false;
    const { oplog } = this.primary;
    const from = Math.max(0, this.position + 1 - (oplog[0]?.seq ?? 0));
    for (const entry of oplog.slice(from)) {
      if (docs.length >= limit) {
        full = true;
        break;
      }
      this.position = entry.seq;
      if (!this.concerns(entry)) continue;
      if (entry.operationType !== 'invalidate') docs.push(...this.passed(this.event(entry)));
      if (this.ends(entry)) {
        const invalidate = { operationType: 'invalidate', clusterTime: clusterTime(entry.seq), wallTime: new Date() };
        docs.push(...this.passed({ _id: resumeToken(entry.seq, true), ...invalidate }));
        this.invalidated = true;
        break;
      }
    }
    // Having read the whole oplog, the stream's resume point is its end, whatever it let through.
    if (!full && !this.invalidated) this.position = Math.max(this.position, this.primary.lastSeq);
    return { docs, exhausted: this.invalidated, postBatchResumeToken: resumeToken(this.position, this.invalidated) };
  }

  private concerns(entry: ChangeEntry): boolean {
    if (this.watched.db !== undefined && entry.db !== this.watched.db) return false;
    return (
      this.watched.coll === undefined || entry.coll === this.watched.coll || entry.operationType === 'dropDatabase'
    );
  }

  /** Whether this entry ends the stream: its collection dropped or invalidated, or its database dropped. */
  private ends(entry: ChangeEntry): boolean {
    if (entry.operationType === 'dropDatabase') return this.watched.db !== undefined;
    if (entry.operationType === 'drop' || entry.operationType === 'invalidate') return this.watched.coll !== undefined;
    return false;
  }

  private event(entry: ChangeEntry): Doc {
    const { seq: _seq, db, coll, operationType, documentKey, fullDocument, updateDescription } = entry;
    let full = fullDocument;
    if (this.lookup && operationType === 'update' && documentKey) {
      const current = this.primary.collection(db, coll)?.match({ _id: documentKey._id })[0];
      full = current ?? undefined;
    }
    return {
      _id: resumeToken(entry.seq),
      operationType,
      clusterTime: clusterTime(entry.seq),
      wallTime: new Date(),
      ns: operationType === 'dropDatabase' ? { db } : { db, coll },
      ...(documentKey ? { documentKey } : {}),
      ...(updateDescription ? { updateDescription } : {}),
      ...(full ? { fullDocument: cloneDoc(full) } : {}),
    };
  }

  private passed(event: Doc): Document[] {
    return this.pipeline.length === 0 ? [event] : (new Aggregator(this.pipeline, {}).run([event]) as Document[]);
  }
}
