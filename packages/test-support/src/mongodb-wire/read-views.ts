import { Query } from 'mingo';
import { type Doc, idKeyOf, sortedDocs } from './data.ts';
import type { WriteOwner } from './primary.ts';

/** A committed change of one document: what it was before, and the oplog position of the change. */
interface Change {
  seq: number;
  doc: Doc | undefined;
}

/**
 * What each reader may see, as the server's isolation shows it: nobody sees
 * a transaction's uncommitted writes (the documents it holds are read as
 * they were before it, one it inserted not at all), and a transaction reads
 * the data as committed at its snapshot, plus its own writes.
 */
export class ReadViews {
  /** The documents transactions in progress hold, as they were before them (`undefined`: inserted by them). */
  private readonly held = new Map<string, { owner: WriteOwner; doc: Doc | undefined }>();
  /** Committed changes since the oldest snapshot of a transaction in progress, by document, oldest first. */
  private readonly history = new Map<string, Change[]>();
  private readonly open = new Set<WriteOwner>();

  opened(owner: WriteOwner): void {
    this.open.add(owner);
  }

  /** A transaction takes a document, which was `before` until then. */
  hold(key: string, owner: WriteOwner, before: Doc | undefined): void {
    if (!this.held.has(key)) this.held.set(key, { owner, doc: before });
  }

  /** What a held document was before its holder: for the change its commit makes. */
  before(key: string): Doc | undefined {
    return this.held.get(key)?.doc;
  }

  /** A committed change of a document, which was `before` until `seq`; kept while a snapshot may need it. */
  changed(key: string, before: Doc | undefined, seq: number): void {
    if (this.open.size === 0) return;
    const changes = this.history.get(key);
    if (changes) changes.push({ seq, doc: before });
    else this.history.set(key, [{ seq, doc: before }]);
  }

  /** A transaction ended: its documents are let go, and history no snapshot needs any more is dropped. */
  closed(owner: WriteOwner): void {
    for (const key of owner.locks) if (this.held.get(key)?.owner === owner) this.held.delete(key);
    this.open.delete(owner);
    const oldest = Math.min(...[...this.open].map((each) => each.snapshotSeq));
    for (const [key, changes] of this.history) {
      const kept = changes.filter((change) => change.seq > oldest);
      if (kept.length === 0) this.history.delete(key);
      else this.history.set(key, kept);
    }
  }

  /** `current` (the documents of namespace `ns` matching `filter`, as stored now) as `reader` sees them. */
  view(ns: string, current: Doc[], filter: Doc, sort: Record<string, 1 | -1> | undefined, reader?: WriteOwner): Doc[] {
    if (this.held.size === 0 && (!reader || this.history.size === 0)) return current;
    const prefix = `${ns}|`;
    const seen = new Map<string, Doc | undefined>();
    for (const [key, held] of this.held) if (held.owner !== reader && key.startsWith(prefix)) seen.set(key, held.doc);
    if (reader) {
      for (const [key, changes] of this.history) {
        if (!key.startsWith(prefix) || reader.locks.has(key)) continue;
        const first = changes.find((change) => change.seq > reader.snapshotSeq);
        if (first) seen.set(key, first.doc);
      }
    }
    if (seen.size === 0) return current;
    const shown = current.filter((doc) => !seen.has(`${prefix}${idKeyOf(doc._id)}`));
    const query = new Query(filter, {});
    for (const doc of seen.values()) if (doc && query.test(doc)) shown.push(doc);
    return sortedDocs(shown, sort);
  }
}
