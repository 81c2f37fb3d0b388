import type { Document } from 'bson';
import { Aggregator } from 'mingo';
import { openChangeStream } from './change-streams.ts';
import { type CommandContext, type CommandHandler, collectionOf, planned } from './context.ts';
import { ArrayCursor, DEFAULT_FIRST_BATCH } from './cursors.ts';
import { cloneDoc, type Doc, projectedAll } from './data.ts';
import { wireError } from './errors.ts';

/** The documents a query finds, sorted, skipped and limited, after planning it (which checks its hint). */
function found(context: CommandContext, coll: string, filter: Doc, options: Document): Doc[] {
  const limit = Math.abs(Number(options.limit ?? 0)) || undefined;
  const skip = Number(options.skip ?? 0);
  planned(context, coll, filter, { hint: options.hint, sort: options.sort, limit });
  const matched = context.primary.matchCommitted(context.db, coll, filter, options.sort, context.transaction);
  return matched.slice(skip, limit === undefined ? undefined : skip + limit);
}

const find: CommandHandler = async (context) => {
  const { body } = context;
  const coll = collectionOf(context);
  const filter = (body.filter ?? {}) as Doc;
  const docs = projectedAll(found(context, coll, filter, body), body.projection);
  const cursor = new ArrayCursor(`${context.db}.${coll}`, docs);
  const single = body.singleBatch === true || Number(body.limit ?? 0) < 0;
  const batch = await cursor.next(Number(body.batchSize ?? DEFAULT_FIRST_BATCH));
  return { cursor: context.cursors.reply(cursor, single ? { ...batch, exhausted: true } : batch) };
};

const getMore: CommandHandler = async (context) => {
  const { body } = context;
  const id = Number(body.getMore);
  const cursor = context.cursors.get(id);
  if (cursor.ns !== `${context.db}.${body.collection}`) {
    throw wireError(
      13,
      `Requested getMore on namespace '${context.db}.${body.collection}', but cursor belongs to a different namespace ${cursor.ns}`,
    );
  }
  const maxTimeMS = body.maxTimeMS === undefined ? undefined : Number(body.maxTimeMS);
  const batchSize = body.batchSize === undefined ? undefined : Number(body.batchSize);
  try {
    const batch = await cursor.next(batchSize, maxTimeMS, context.abandoned);
    return { cursor: context.cursors.more(id, batch) };
  } catch (error) {
    context.cursors.kill(id);
    throw error;
  }
};

const killCursors: CommandHandler = (context) => {
  const ids = ((context.body.cursors ?? []) as unknown[]).map(Number);
  const killed = ids.filter((id) => context.cursors.kill(id));
  const notFound = ids.filter((id) => !killed.includes(id));
  return { cursorsKilled: killed, cursorsNotFound: notFound, cursorsAlive: [], cursorsUnknown: [] };
};

/** The read concern level of a command, or `undefined` when it sets none. */
function readConcernLevel(body: Document): string | undefined {
  const level = (body.readConcern as { level?: unknown } | undefined)?.level;
  return typeof level === 'string' ? level : undefined;
}

/** Aggregation stages that never change the documents they are given. */
const READ_ONLY_STAGES = new Set([
  '$match',
  '$group',
  '$count',
  '$sort',
  '$limit',
  '$skip',
  '$project',
  '$sortByCount',
]);

const aggregate: CommandHandler = async (context) => {
  const { body } = context;
  const pipeline = (body.pipeline ?? []) as Document[];
  const [first, ...rest] = pipeline;
  const batchSize = (body.cursor as { batchSize?: number } | undefined)?.batchSize;
  if (first?.$changeStream !== undefined)
    return changeStream(context, first.$changeStream as Document, rest, batchSize);
  const coll = collectionOf(context);
  const match = (first?.$match ?? {}) as Doc;
  planned(context, coll, match, { hint: body.hint });
  const stages = first?.$match === undefined ? pipeline : rest;
  const found = context.primary.matchCommitted(context.db, coll, match, undefined, context.transaction);
  // Stages that only read their input run on the stored documents; any other gets copies.
  const docs = stages.every((stage) => READ_ONLY_STAGES.has(Object.keys(stage)[0] ?? '')) ? found : found.map(cloneDoc);
  const output = new Aggregator(stages, {}).run(docs) as Document[];
  const cursor = new ArrayCursor(`${context.db}.${coll}`, output);
  return { cursor: context.cursors.reply(cursor, await cursor.next(batchSize ?? DEFAULT_FIRST_BATCH)) };
};

/**
 * A `$changeStream` aggregate. As the server's stage declares, it runs only
 * at read concern `majority` (or none, which it takes as majority): any
 * other level fails with InvalidOptions (72); never in a transaction.
 */
async function changeStream(context: CommandContext, stage: Document, rest: Document[], batchSize?: number) {
  const level = readConcernLevel(context.body);
  if (level !== undefined && level !== 'majority') {
    throw wireError(
      72,
      `Aggregation stage $changeStream cannot run with a readConcern other than 'majority'. Current readConcern: ${level}`,
    );
  }
  if (context.transaction) {
    throw wireError(
      263,
      'Operation not permitted in transaction :: caused by :: Aggregation stage $changeStream cannot run within a multi-document transaction.',
    );
  }
  if (context.standalone) throw wireError(40573, 'The $changeStream stage is only supported on replica sets');
  const target = context.body.aggregate;
  const coll = typeof target === 'string' ? target : undefined;
  const cluster = stage.allChangesForCluster === true;
  if (cluster && context.db !== 'admin')
    throw wireError(2, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database");
  const watched = { db: cluster ? undefined : context.db, coll };
  const ns = `${context.db}.${coll ?? '$cmd.aggregate'}`;
  const cursor = openChangeStream(context.primary, ns, watched, stage, rest);
  const batch = await cursor.first(batchSize);
  return { cursor: context.cursors.reply(cursor, batch) };
}

const count: CommandHandler = (context) => {
  const { body } = context;
  return { n: found(context, collectionOf(context), (body.query ?? {}) as Doc, body).length };
};

const distinct: CommandHandler = (context) => {
  const { body } = context;
  const docs = found(context, collectionOf(context), (body.query ?? {}) as Doc, body);
  const [result] = new Aggregator([{ $group: { _id: null, values: { $addToSet: `$${body.key}` } } }], {}).run(docs);
  return { values: (result as Doc | undefined)?.values ?? [] };
};

export const readCommands: Record<string, CommandHandler> = {
  find,
  getMore,
  killCursors,
  aggregate,
  count,
  distinct,
};
