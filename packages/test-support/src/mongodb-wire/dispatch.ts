import { Binary, type Document, Long } from 'bson';
import { adminCommands } from './commands-admin.ts';
import { readCommands } from './commands-read.ts';
import { asWireError, writeCommands } from './commands-write.ts';
import type { CommandContext, CommandHandler } from './context.ts';
import { withDatabaseNow } from './database-now.ts';
import { isWriteCommand, serverLabels, WireError, wireError } from './errors.ts';
import type { FailPoints, FailureAction } from './fail-points.ts';
import { refuseUnmodelled } from './unmodelled.ts';

const HANDLERS: Record<string, CommandHandler> = { ...readCommands, ...writeCommands, ...adminCommands };

/** Commands a member that is not primary still answers. */
const ANY_MEMBER = new Set(['ping', 'buildInfo', 'endSessions', 'killCursors', 'getMore', 'abortTransaction']);
/** Reads a secondary serves when the read preference allows it. */
const READS = new Set(['find', 'aggregate', 'count', 'distinct', 'listCollections', 'listIndexes']);
/** Commands that wait for their write concern once applied (a transaction's statements wait at the commit). */
const ACKNOWLEDGED = new Set([
  'insert',
  'update',
  'delete',
  'findAndModify',
  'create',
  'drop',
  'dropDatabase',
  'dropIndexes',
  'collMod',
  'commitTransaction',
]);

function signedClusterTime(context: CommandContext): Document {
  const clusterTime = context.primary.operationTime;
  return {
    $clusterTime: { clusterTime, signature: { hash: new Binary(Buffer.alloc(20)), keyId: Long.fromNumber(0) } },
    operationTime: clusterTime,
  };
}

/** Whether the command is a change stream's: its aggregate, or a `getMore` of its cursor. */
function isChangeStream(context: CommandContext): boolean {
  const { body } = context;
  if (body.getMore !== undefined) return context.cursors.peek(Number(body.getMore))?.changeStream === true;
  const first = (body.pipeline as Document[] | undefined)?.[0];
  return body.aggregate !== undefined && first?.$changeStream !== undefined;
}

/** The answer to a failed command: the error, its labels (the server's own unless the fail point sets them). */
function failed(context: CommandContext, error: WireError, labels?: string[]): Document {
  const errorLabels = labels ?? serverLabels(context.body, error.code);
  const resumable = [6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 43, 133, 150, 234].includes(
    error.code,
  );
  if (!labels && resumable && isChangeStream(context)) errorLabels.push('ResumableChangeStreamError');
  context.record.outcome = error.code;
  return {
    ok: 0,
    ...error.toReply(),
    ...(errorLabels.length > 0 ? { errorLabels } : {}),
    ...signedClusterTime(context),
  };
}

/** Refuses what a member that is not primary refuses: writes (10107), and reads that need the primary (13435). */
function checkPrimary(context: CommandContext, name: string): void {
  if (context.primary.writablePrimary || ANY_MEMBER.has(name)) return;
  const mode = (context.body.$readPreference as { mode?: string } | undefined)?.mode ?? 'primary';
  if (READS.has(name)) {
    if (mode !== 'primary') return;
    throw wireError(13435, 'not primary and secondaryOk=false');
  }
  throw wireError(10107, 'not primary');
}

/** What the command's `maxTimeMS` leaves of its time, if it set one. */
function maxTimeLeft(context: CommandContext, startedAt: number): number | undefined {
  const maxTimeMS = Number(context.body.maxTimeMS ?? 0);
  return maxTimeMS > 0 ? maxTimeMS - (Date.now() - startedAt) : undefined;
}

/**
 * What a `failCommand` failure does before its command runs (after its `blockTimeMS`): the connection
 * dropped (`'close'`), or the error answered. `undefined` when the command runs, a `writeConcernError` the
 * failure sets then joining its answer.
 */
export async function failBefore(
  context: CommandContext,
  failure: FailureAction | undefined,
): Promise<Document | 'close' | undefined> {
  if (!failure) return undefined;
  if (failure.blockMs > 0) await new Promise((resolve) => setTimeout(resolve, failure.blockMs));
  if (failure.closeConnection) return 'close';
  if (failure.errorCode === undefined) return undefined;
  const message = `Failing command ${context.record.name} via 'failCommand' failpoint`;
  return failed(context, wireError(failure.errorCode, message), failure.errorLabels);
}

/**
 * Runs one command as the server would: `configureFailPoint`, or a fail point first, then the
 * primary's state, the transaction or retried write it belongs to, the
 * command, and its write concern. Resolves to the reply, or to `'close'`
 * when the connection must be dropped without one.
 */
export async function runCommand(
  context: CommandContext,
  failPoints: FailPoints,
  appName: string | undefined,
): Promise<Document | 'close'> {
  const name = context.record.name;
  const startedAt = Date.now();
  if (name === 'configureFailPoint') {
    try {
      return { ...failPoints.configure(context.body), ok: 1, ...signedClusterTime(context) };
    } catch (error) {
      return failed(context, asWireError(error));
    }
  }
  const failure = failPoints.take(name, appName);
  const failedFirst = await failBefore(context, failure);
  if (failedFirst) return failedFirst;
  try {
    const handler = HANDLERS[name];
    if (!handler) throw wireError(59, `no such command: '${name}'`);
    refuseUnmodelled(name, context.body);
    context.body = withDatabaseNow(name, context.body, context.primary.now());
    checkPrimary(context, name);
    if (context.standalone && context.body.txnNumber !== undefined) {
      throw wireError(20, 'Transaction numbers are only allowed on a replica set member or mongos');
    }
    context.transaction = context.sessions.transactionFor(context.body);
    const retried = isWriteCommand(name) ? context.sessions.answered(context.body) : undefined;
    const answer = retried ?? (await handler(context));
    context.primary.afterCommand?.(context.record, answer);
    if (isWriteCommand(name) && !retried && !answer.writeErrors) {
      context.sessions.remember(context.body, answer);
      const retryable = context.body.txnNumber !== undefined && !context.transaction;
      if (retryable && failPoints.takeAfterWrite()) return 'close';
    }
    const reply: Document = { ...answer, ok: 1 };
    const waits = ACKNOWLEDGED.has(name) && (!context.transaction || name === 'commitTransaction');
    const concernError = waits
      ? await context.primary.awaitMajority(
          context.body.writeConcern,
          context.abandoned,
          maxTimeLeft(context, startedAt),
        )
      : undefined;
    const writeConcernError = failure?.writeConcernError ?? concernError;
    if (writeConcernError) {
      reply.writeConcernError = writeConcernError;
      const labels = failure?.errorLabels ?? serverLabels(context.body, undefined, Number(writeConcernError.code));
      if (labels.length > 0) reply.errorLabels = labels;
    }
    const firstWriteError = (answer.writeErrors as Document[] | undefined)?.[0];
    context.record.outcome = firstWriteError
      ? Number(firstWriteError.code)
      : writeConcernError
        ? Number(writeConcernError.code)
        : 'ok';
    return { ...reply, ...signedClusterTime(context) };
  } catch (error) {
    try {
      return failed(context, asWireError(error));
    } catch {
      const message = `the MongoDB wire double could not run ${name}: ${(error as Error).message}`;
      return failed(context, new WireError(1, 'InternalError', message));
    }
  }
}
