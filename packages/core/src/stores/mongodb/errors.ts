import {
  MongoBulkWriteError,
  MongoClientClosedError,
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoParseError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  type WriteError,
} from 'mongodb';
import { WorkqError } from '../../errors.ts';
import { CallAbandoned } from './call-limit.ts';

/** The server's duplicate-key error code. */
export const DUPLICATE_KEY = 11000;
const ILLEGAL_OPERATION = 20;
const NAMESPACE_NOT_FOUND = 26;
const INDEX_NOT_FOUND = 27;
const MAX_TIME_MS_EXPIRED = 50;
/** `WriteConcernFailed` before MongoDB 7.1, `WriteConcernTimeout` since: a majority did not acknowledge in time. */
const WRITE_CONCERN_TIMEOUT = 64;
const INDEX_OPTIONS_CONFLICT = 85;
const INDEX_KEY_SPECS_CONFLICT = 86;
const WRITE_CONFLICT = 112;

/**
 * The codes of a primary that stepped down, is shutting down or was never
 * the primary: NotWritablePrimary, NotPrimaryNoSecondaryOk,
 * NotPrimaryOrSecondary, PrimarySteppedDown, ShutdownInProgress,
 * InterruptedAtShutdown, InterruptedDueToReplStateChange. The driver retries
 * single-document writes on them itself, but not multi-document ones
 * (`updateMany`, `deleteMany`), which reach the store as these codes
 * without a retryable label; once the new primary is elected, the same call
 * succeeds, so they are classed as retryable.
 */
const STEP_DOWN_CODES: ReadonlySet<number> = new Set([10107, 13435, 13436, 189, 91, 11600, 11602]);

/**
 * Node's own codes for a socket that failed. The driver wraps socket errors
 * in `MongoNetworkError`, except where a write waits for the socket to drain:
 * a socket that fails then (the peer closed it) reaches the caller as is.
 */
const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  'EPIPE',
  'ECONNRESET',
  'ECONNABORTED',
  'ERR_STREAM_DESTROYED',
]);

/** Whether the connection failed: a driver network error, or a socket error the driver let through. */
function isConnectionLost(error: unknown): boolean {
  return (
    error instanceof MongoNetworkError ||
    (error instanceof Error && SOCKET_ERROR_CODES.has(String((error as NodeJS.ErrnoException).code)))
  );
}

/** The one place the MongoDB store turns driver errors into `WorkqError`s. */
export function toWorkqError(thrown: unknown, hosts: string, operation: string): WorkqError {
  if (thrown instanceof WorkqError) return thrown;
  // A bulk write (insertMany, bulkWrite) reports a connection failure wrapped in its own error.
  const error =
    thrown instanceof MongoBulkWriteError && thrown.errorResponse instanceof Error ? thrown.errorResponse : thrown;
  if (error instanceof CallAbandoned) {
    return new WorkqError(
      'UNAVAILABLE',
      `MongoDB at ${hosts} did not finish the ${operation} within ${error.limitMs} ms (the wait for a primary, then for a majority); it may still be applied. Check that the server is running and reachable from here.`,
      { retryable: true, cause: thrown },
    );
  }
  if (
    error instanceof MongoServerSelectionError ||
    isConnectionLost(error) ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoClientClosedError
  ) {
    return new WorkqError(
      'UNAVAILABLE',
      `Cannot reach MongoDB at ${hosts} (${operation}): check that the server is running and reachable from here.`,
      { retryable: true, cause: thrown },
    );
  }
  if (isWriteTimeout(error)) {
    return new WorkqError(
      'TIMEOUT',
      `MongoDB at ${hosts} did not confirm the ${operation} on a majority of the replica set within writeTimeoutMS; it may still be applied. Check that a majority of the members is up and reachable.`,
      { retryable: true, cause: thrown },
    );
  }
  // The connection-string parser has a `MongoParseError` class of its own, so match the name as well.
  if (error instanceof MongoParseError || (error instanceof Error && error.name === 'MongoParseError')) {
    return new WorkqError('VALIDATION', 'The MongoDB connection string is not valid; check its format and options.', {
      cause: thrown,
    });
  }
  if (error instanceof MongoServerError && (error.code === 13 || error.code === 18)) {
    return new WorkqError('UNAVAILABLE', `MongoDB at ${hosts} refused the credentials or permissions (${operation}).`, {
      retryable: false,
      cause: thrown,
    });
  }
  if (isStepDown(error)) {
    return new WorkqError(
      'UNAVAILABLE',
      `MongoDB at ${hosts} has no primary to take the ${operation} (it stepped down or is shutting down); retry once a new primary is elected.`,
      { retryable: true, cause: thrown },
    );
  }
  const retryable =
    error instanceof MongoError &&
    (error.hasErrorLabel('RetryableWriteError') || error.hasErrorLabel('TransientTransactionError'));
  return new WorkqError('UNAVAILABLE', `MongoDB at ${hosts} failed the ${operation} operation.`, {
    retryable,
    cause: thrown,
  });
}

/** Whether the server refused a call because it is not (or no longer) a writable primary (see `STEP_DOWN_CODES`). */
export function isStepDown(error: unknown): boolean {
  return error instanceof MongoServerError && typeof error.code === 'number' && STEP_DOWN_CODES.has(error.code);
}

/**
 * Whether a call failed without reaching a primary that applied it: no
 * server selected, the connection lost, a primary stepping down, or a
 * failure the driver labels retryable. Repeating an idempotent write after
 * such a failure is how it gets applied once a primary is back. A call the
 * store abandoned after its limit (`CallAbandoned`) counts as well: it may
 * have been applied, which the repeat of an idempotent write does not mind.
 * A majority that did not acknowledge in time is not one: the primary
 * applied that write.
 */
export function isTransient(thrown: unknown): boolean {
  const error =
    thrown instanceof MongoBulkWriteError && thrown.errorResponse instanceof Error ? thrown.errorResponse : thrown;
  if (isWriteTimeout(error)) return false;
  return (
    error instanceof CallAbandoned ||
    error instanceof MongoServerSelectionError ||
    isConnectionLost(error) ||
    isStepDown(error) ||
    (error instanceof MongoError &&
      (error.hasErrorLabel('RetryableWriteError') || error.hasErrorLabel('TransientTransactionError')))
  );
}

/** Whether a single write failed on a unique index. */
export function isDuplicateKeyError(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/** The per-document errors of a failed bulk insert, or `null` when the error is not one. */
export function bulkWriteErrors(error: unknown): WriteError[] | null {
  if (!(error instanceof MongoBulkWriteError)) return null;
  const errors: readonly WriteError[] | WriteError = error.writeErrors;
  return Array.isArray(errors) ? [...errors] : [errors as WriteError];
}

/** Whether a transaction's write met a document another transaction holds, or one written after its snapshot. */
export function isWriteConflict(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === WRITE_CONFLICT;
}

/**
 * Whether the server refused a transaction because it is not a replica set
 * member or mongos. The driver hands a write's IllegalOperation (20) back as
 * its own advice to turn retryable writes off, with the server's error as
 * `originalError`.
 */
export function isTransactionUnsupportedError(thrown: unknown): boolean {
  const error =
    thrown instanceof MongoServerError && thrown.originalError instanceof MongoServerError
      ? thrown.originalError
      : thrown;
  return (
    error instanceof MongoServerError &&
    (error.code === ILLEGAL_OPERATION || /Transaction numbers are only allowed/i.test(error.message))
  );
}

/** Whether a majority did not acknowledge a write within its `wtimeoutMS`, or a command ran out of its `maxTimeMS`. */
export function isWriteTimeout(error: unknown): boolean {
  return (
    error instanceof MongoServerError &&
    (error.code === WRITE_CONCERN_TIMEOUT || error.code === MAX_TIME_MS_EXPIRED || error.errInfo?.wtimeout === true)
  );
}

/**
 * Whether an index stands in the way of one being created: the same name
 * with another key or partial filter (86), or with other options, or the
 * same key and partial filter under another name (85).
 */
export function isIndexConflict(error: unknown): boolean {
  return (
    error instanceof MongoServerError &&
    (error.code === INDEX_OPTIONS_CONFLICT || error.code === INDEX_KEY_SPECS_CONFLICT)
  );
}

/** Whether a call failed because the index it names does not exist (e.g. another server dropped it first). */
export function isIndexNotFound(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === INDEX_NOT_FOUND;
}

/** Whether a call failed because its collection does not exist (yet). */
export function isNamespaceNotFound(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND;
}
