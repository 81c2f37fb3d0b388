import type { Document } from 'bson';
import type { Cursors } from './cursors.ts';
import type { Doc, IndexSpec } from './data.ts';
import { wireError } from './errors.ts';
import { impliesPartialFilter, planQuery } from './plan.ts';
import type { PrimaryState, RecordedCommand } from './primary.ts';
import type { Sessions, Transaction } from './sessions.ts';

/** What a command handler works with. */
export interface CommandContext {
  primary: PrimaryState;
  cursors: Cursors;
  sessions: Sessions;
  db: string;
  body: Document;
  record: RecordedCommand;
  /** The transaction the command runs in, if any. */
  transaction: Transaction | undefined;
  /** Resolves when the client's connection closes: what the command waits on is abandoned. */
  abandoned: Promise<void>;
  /** Whether the primary answers as a replica set member (else as a mongos, or as a standalone). */
  replicaSet: boolean;
  /** Whether it answers as a standalone server. */
  standalone: boolean;
  /** The address the primary is reached at (`127.0.0.1:<port>`). */
  address: string;
}

export type CommandHandler = (context: CommandContext) => Document | Promise<Document>;

/** The collection a command names in its first field. */
export function collectionOf(context: CommandContext): string {
  const name = Object.values(context.body)[0];
  if (typeof name !== 'string' || name.length === 0) {
    throw wireError(73, `collection name has invalid type ${typeof name}`);
  }
  return name;
}

const HINT_REFUSED =
  'error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index';

function sameKey(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return JSON.stringify(Object.entries(a)) === JSON.stringify(Object.entries(b));
}

/**
 * Checks a query's hint as the server's planner does and records the query
 * on the command: a hint must name an index of the collection (by name or
 * key), and a partial index only serves a query that implies its filter;
 * else BadValue (2). While `costQueries` is on, each query is recorded with
 * its cost by the double's model (`planQuery`, which picks the cheapest
 * usable index when there is no hint; the server's planner may choose
 * otherwise).
 */
export function planned(
  context: CommandContext,
  coll: string,
  filter: Doc,
  options: { hint?: unknown; sort?: Record<string, 1 | -1>; limit?: number },
): void {
  const hint = options.hint as string | Record<string, unknown> | undefined;
  const data = context.primary.collection(context.db, coll);
  const noHint = hint === undefined || (typeof hint === 'object' && Object.keys(hint).length === 0);
  const cost = () => {
    if (!context.primary.costQueries) return undefined;
    // The server answers a query on a collection that does not exist with an EOF plan that examines nothing.
    if (!data) return { index: 'EOF', examined: 0, sortedByIndex: false };
    return planQuery(data.plannedIndexes(), data.docs.size, {
      filter,
      sort: options.sort,
      limit: options.limit,
      hint: noHint ? undefined : (hint as string | Record<string, 1 | -1>),
    });
  };
  const query = { collection: coll, filter, ...(hint === undefined ? {} : { hint }) };
  if (noHint) {
    context.record.queries.push({ ...query, plan: cost() });
    return;
  }
  const specs = data ? [{ name: '_id_', key: { _id: 1 } } as IndexSpec, ...data.indexes.values()] : [];
  const index = specs.find((spec) => (typeof hint === 'string' ? spec.name === hint : sameKey(spec.key, hint)));
  const usable =
    index !== undefined &&
    (!index.partialFilterExpression || impliesPartialFilter(filter, index.partialFilterExpression as Doc));
  if (!usable) {
    context.record.refusedHints.push(hint);
    throw wireError(2, HINT_REFUSED);
  }
  context.record.queries.push({ ...query, index: index.name, plan: cost() });
}
