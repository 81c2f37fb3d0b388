import type { Document } from 'bson';
import type { Cursors } from './cursors.ts';
import type { Doc } from './data.ts';
import { wireError } from './errors.ts';
import { planQuery, type QueryPlan } from './plan.ts';
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
  /** Whether the primary answers as a replica set member (else as a mongos). */
  replicaSet: boolean;
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

/**
 * Plans a query as the server would (which checks its hint: an index that
 * does not exist, or one the query cannot use, fails with BadValue) and
 * records the plan on the command.
 */
export function planned(
  context: CommandContext,
  coll: string,
  filter: Doc,
  options: { sort?: Document; limit?: number; hint?: unknown },
): QueryPlan {
  const data = context.primary.collection(context.db, coll);
  const hint = options.hint as string | Record<string, 1 | -1> | undefined;
  if (!data) {
    if (hint !== undefined && !(typeof hint === 'object' && Object.keys(hint).length === 0)) {
      throw wireError(
        2,
        'error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index',
      );
    }
    const plan = { index: 'EOF', examined: 0, sortedByIndex: false };
    context.record.plans.push({ collection: coll, filter, plan });
    return plan;
  }
  const plan = planQuery(data.plannedIndexes(), data.docs.size, {
    filter,
    sort: options.sort as Record<string, 1 | -1> | undefined,
    limit: options.limit,
    hint,
  });
  context.record.plans.push({ collection: coll, filter, ...(hint === undefined ? {} : { hint }), plan });
  return plan;
}
