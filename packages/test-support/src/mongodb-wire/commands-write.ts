import { isDeepStrictEqual } from 'node:util';
import { BSON, type Document } from 'bson';
import { type CommandContext, type CommandHandler, collectionOf, planned } from './context.ts';
import { type Doc, idKeyOf, projected, updatedDoc, upsertSeed } from './data.ts';
import { WireError, wireError } from './errors.ts';
import { HeldByTransaction, MAX_BSON_OBJECT_SIZE } from './primary.ts';

/** A statement's outcome, summed into the command's answer. */
interface Outcome {
  n: number;
  nModified?: number;
  upserted?: unknown;
  before?: Doc;
  after?: Doc;
}

/** A failure as the server reports it: a `WireError`, or the data layer's `MongoServerError` shape. */
export function asWireError(error: unknown): WireError {
  if (error instanceof WireError) return error;
  const e = error as {
    code?: unknown;
    codeName?: unknown;
    errmsg?: unknown;
    message?: unknown;
    keyPattern?: unknown;
    keyValue?: unknown;
  };
  if (typeof e?.code !== 'number') throw error;
  const message = String(e.errmsg ?? e.message);
  const extra: Document = {};
  if (e.keyPattern !== undefined) extra.keyPattern = e.keyPattern;
  if (e.keyValue !== undefined) extra.keyValue = e.keyValue;
  if (e.code === 11000)
    return new WireError(11000, 'DuplicateKey', `${message} dup key: ${JSON.stringify(e.keyValue)}`, extra);
  return wireError(e.code, message, extra);
}

function checkInsertSize(doc: Doc): void {
  const size = BSON.calculateObjectSize(doc);
  if (size > MAX_BSON_OBJECT_SIZE) {
    throw wireError(2, `object to insert too large. size in bytes: ${size}, max size: ${MAX_BSON_OBJECT_SIZE}`);
  }
}

function isReplacement(update: unknown): update is Doc {
  return !Array.isArray(update) && !Object.keys(update as Doc).some((key) => key.startsWith('$'));
}

/**
 * The document an update makes of `before`, refusing what the server refuses:
 * a changed `_id`, and a document over 16 MiB, which the server's update
 * stage answers with 17419 (17420 for the document an upsert would insert):
 * a write error of its statement, not of the command.
 */
function applyUpdate(before: Doc, update: Doc | Doc[], inserting: boolean): Doc {
  const after = isReplacement(update)
    ? { ...update, _id: update._id ?? before._id }
    : updatedDoc(before, update, inserting);
  if (idKeyOf(after._id) !== idKeyOf(before._id)) {
    throw wireError(66, "Performing an update on the path '_id' would modify the immutable field '_id'");
  }
  if (BSON.calculateObjectSize(after) > MAX_BSON_OBJECT_SIZE) {
    throw inserting
      ? wireError(17420, `Document to upsert is larger than ${MAX_BSON_OBJECT_SIZE}`)
      : wireError(17419, `Resulting document after update is larger than ${MAX_BSON_OBJECT_SIZE}`);
  }
  return after;
}

/**
 * Runs one statement once no transaction holds what it writes: a write
 * outside transactions waits for the holder, as the server's does.
 */
async function settled<T>(
  context: CommandContext,
  coll: string,
  targets: () => Doc[],
  apply: (targets: Doc[]) => T,
): Promise<T> {
  for (;;) {
    const docs = targets();
    let held = context.transaction ? undefined : context.primary.heldBy(context.db, coll, docs);
    if (!held) {
      try {
        return apply(docs);
      } catch (error) {
        // A unique key another transaction wrote and holds: wait for it to end, then write again.
        if (!(error instanceof HeldByTransaction)) throw error;
        held = error.until;
      }
    }
    const gone = await Promise.race([held.then(() => false), context.abandoned.then(() => true)]);
    // No one waits for the answer: stop rather than wait on (or spin past) a holder that may never end.
    if (gone) throw wireError(9001, 'the connection closed while the write waited for a transaction to end');
  }
}

async function updateStatement(context: CommandContext, coll: string, statement: Document): Promise<Outcome> {
  const { primary, db, transaction } = context;
  const filter = (statement.q ?? {}) as Doc;
  const multi = statement.multi === true;
  const targets = () => {
    planned(context, coll, filter, { hint: statement.hint, sort: statement.sort, ...(multi ? {} : { limit: 1 }) });
    const found = primary.matchCommitted(db, coll, filter, statement.sort, transaction);
    return multi ? found : found.slice(0, 1);
  };
  return settled(context, coll, targets, (docs) => {
    if (docs.length === 0) {
      if (statement.upsert !== true) return { n: 0, nModified: 0 };
      const seed = upsertSeed(filter);
      const created = applyUpdate(seed, statement.u, true);
      checkInsertSize(created);
      const stored = primary.insert(db, coll, created, transaction);
      return { n: 1, nModified: 0, upserted: stored._id, after: stored };
    }
    let modified = 0;
    let last: Outcome = { n: 0 };
    for (const before of docs) {
      const after = applyUpdate(before, statement.u, false);
      if (!isDeepStrictEqual(before, after)) {
        primary.replace(db, coll, before, after, transaction);
        modified += 1;
      }
      last = { n: 0, before, after };
    }
    return { ...last, n: docs.length, nModified: modified };
  });
}

async function deleteStatement(context: CommandContext, coll: string, statement: Document): Promise<Outcome> {
  const { primary, db, transaction } = context;
  const filter = (statement.q ?? {}) as Doc;
  const limit = Number(statement.limit ?? 0) === 1 ? 1 : undefined;
  const targets = () => {
    planned(context, coll, filter, { hint: statement.hint, sort: statement.sort, limit });
    const found = primary.matchCommitted(db, coll, filter, statement.sort, transaction);
    return limit === undefined ? found : found.slice(0, limit);
  };
  return settled(context, coll, targets, (docs) => {
    for (const doc of docs) primary.remove(db, coll, doc, transaction);
    return { n: docs.length, before: docs[0] };
  });
}

/**
 * Runs a write command's statements in order (stopping at the first
 * failure when `ordered`), each failure a `writeErrors` entry as the server
 * reports it, except a write conflict, which fails the whole command. In a
 * transaction, any failure aborts the transaction.
 */
async function statements(context: CommandContext, list: Document[], run: (statement: Document) => Promise<Outcome>) {
  const answer: Document = { n: 0 };
  const writeErrors: Document[] = [];
  const upserted: Document[] = [];
  let nModified = 0;
  for (const [index, statement] of list.entries()) {
    try {
      const outcome = await run(statement);
      answer.n += outcome.n;
      nModified += outcome.nModified ?? 0;
      if (outcome.upserted !== undefined) upserted.push({ index, _id: outcome.upserted });
    } catch (error) {
      const failure = asWireError(error);
      context.transaction?.abort();
      if (failure.code === 112 || context.transaction) throw failure;
      writeErrors.push({ index, code: failure.code, errmsg: failure.message, ...failure.extra });
      if (context.body.ordered !== false) break;
    }
  }
  return { answer, writeErrors, upserted, nModified };
}

const insert: CommandHandler = async (context) => {
  const coll = collectionOf(context);
  const docs = (context.body.documents ?? []) as Doc[];
  const { answer, writeErrors } = await statements(context, docs, async (doc) =>
    settled(
      context,
      coll,
      () => (doc._id === undefined ? [] : [doc]),
      () => {
        checkInsertSize(doc);
        context.primary.insert(context.db, coll, doc, context.transaction);
        return { n: 1 };
      },
    ),
  );
  return writeErrors.length > 0 ? { ...answer, writeErrors } : answer;
};

const update: CommandHandler = async (context) => {
  const coll = collectionOf(context);
  const list = (context.body.updates ?? []) as Document[];
  const { answer, writeErrors, upserted, nModified } = await statements(context, list, (s) =>
    updateStatement(context, coll, s),
  );
  return {
    ...answer,
    nModified,
    ...(upserted.length > 0 ? { upserted } : {}),
    ...(writeErrors.length > 0 ? { writeErrors } : {}),
  };
};

const remove: CommandHandler = async (context) => {
  const coll = collectionOf(context);
  const list = (context.body.deletes ?? []) as Document[];
  const { answer, writeErrors } = await statements(context, list, (s) => deleteStatement(context, coll, s));
  return writeErrors.length > 0 ? { ...answer, writeErrors } : answer;
};

const findAndModify: CommandHandler = async (context) => {
  const { body } = context;
  const coll = collectionOf(context);
  const statement = {
    q: body.query ?? {},
    u: body.update,
    upsert: body.upsert === true,
    sort: body.sort,
    hint: body.hint,
  };
  let outcome: Outcome;
  try {
    outcome =
      body.remove === true
        ? await deleteStatement(context, coll, { ...statement, limit: 1 })
        : await updateStatement(context, coll, statement);
  } catch (error) {
    context.transaction?.abort();
    throw asWireError(error);
  }
  const chosen = body.remove === true || body.new !== true ? outcome.before : outcome.after;
  const lastErrorObject: Document = { n: outcome.n > 0 ? 1 : 0 };
  if (body.remove !== true) lastErrorObject.updatedExisting = outcome.before !== undefined;
  if (outcome.upserted !== undefined) lastErrorObject.upserted = outcome.upserted;
  return { lastErrorObject, value: chosen ? projected(chosen, body.fields) : null };
};

export const writeCommands: Record<string, CommandHandler> = {
  insert,
  update,
  delete: remove,
  findAndModify,
  findandmodify: findAndModify,
};
