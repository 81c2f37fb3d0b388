import type { Document } from 'bson';

/** A command's failure as the server answers it: `ok: 0` with the code, its name, the message and labels. */
export class WireError extends Error {
  constructor(
    readonly code: number,
    readonly codeName: string,
    message: string,
    /** Further fields of the answer (`keyPattern`, `keyValue`, `errorLabels`). */
    readonly extra: Document = {},
  ) {
    super(message);
  }

  /** The answer's fields, without `ok`. */
  toReply(): Document {
    return { errmsg: this.message, code: this.code, codeName: this.codeName, ...this.extra };
  }
}

/** The server's code names for the codes this primary answers with. */
export const CODE_NAMES: Readonly<Record<number, string>> = {
  2: 'BadValue',
  6: 'HostUnreachable',
  7: 'HostNotFound',
  11: 'UserNotFound',
  13: 'Unauthorized',
  20: 'IllegalOperation',
  26: 'NamespaceNotFound',
  27: 'IndexNotFound',
  43: 'CursorNotFound',
  48: 'NamespaceExists',
  50: 'MaxTimeMSExpired',
  59: 'CommandNotFound',
  64: 'WriteConcernTimeout',
  66: 'ImmutableField',
  67: 'CannotCreateIndex',
  72: 'InvalidOptions',
  85: 'IndexOptionsConflict',
  86: 'IndexKeySpecsConflict',
  89: 'NetworkTimeout',
  91: 'ShutdownInProgress',
  112: 'WriteConflict',
  134: 'ReadConcernMajorityNotAvailableYet',
  189: 'PrimarySteppedDown',
  225: 'TransactionTooOld',
  238: 'NotImplemented',
  244: 'TransactionAborted',
  251: 'NoSuchTransaction',
  256: 'TransactionCommitted',
  262: 'ExceededTimeLimit',
  263: 'OperationNotSupportedInTransaction',
  280: 'ChangeStreamFatalError',
  286: 'ChangeStreamHistoryLost',
  9001: 'SocketException',
  10107: 'NotWritablePrimary',
  10334: 'BSONObjectTooLarge',
  11000: 'DuplicateKey',
  11600: 'InterruptedAtShutdown',
  11602: 'InterruptedDueToReplStateChange',
  13435: 'NotPrimaryNoSecondaryOk',
  13436: 'NotPrimaryOrSecondary',
  40573: 'Location40573',
};

/** A `WireError` with the code's own name. */
export function wireError(code: number, message: string, extra: Document = {}): WireError {
  return new WireError(code, CODE_NAMES[code] ?? `Location${code}`, message, extra);
}

/** The codes the server's `ErrorCodes::isRetriableError` accepts: a retryable write retries on them. */
const RETRIABLE = new Set([6, 7, 89, 91, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);

/**
 * The labels the server adds to a failed command, as its error-label builder
 * does: `TransientTransactionError` on a transaction's statement that failed
 * with a write conflict, a step-down or a lost transaction (and on a commit
 * of a transaction that was lost or conflicted);
 * `RetryableWriteError` on a retryable write or a commit/abort that failed
 * with a retriable code (or a retriable write-concern error);
 * `UnknownTransactionCommitResult` on a commit whose outcome is unknown.
 */
export function serverLabels(body: Document, code: number | undefined, writeConcernCode?: number): string[] {
  const name = Object.keys(body)[0] ?? '';
  const inTransaction = body.autocommit === false;
  const finishing = name === 'commitTransaction' || name === 'abortTransaction';
  const retriable = (code !== undefined && RETRIABLE.has(code)) || RETRIABLE.has(writeConcernCode ?? -1);
  const labels: string[] = [];
  const lost = code === 112 || code === 251;
  if (inTransaction && code !== undefined && (lost || (!finishing && RETRIABLE.has(code)))) {
    labels.push('TransientTransactionError');
  }
  const retryableWrite = body.txnNumber !== undefined && !inTransaction && isWriteCommand(name);
  if (retriable && (retryableWrite || finishing)) labels.push('RetryableWriteError');
  if (name === 'commitTransaction' && (retriable || code === 50 || writeConcernCode === 64)) {
    labels.push('UnknownTransactionCommitResult');
  }
  return labels;
}

const WRITE_COMMANDS = new Set(['insert', 'update', 'delete', 'findAndModify', 'findandmodify']);

export function isWriteCommand(name: string): boolean {
  return WRITE_COMMANDS.has(name);
}
