import { WorkqError } from '../../errors.ts';

/** Driver error codes that mean the server could not be reached or the connection dropped. */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_NORMAL_SHUTDOWN',
  // MariaDB: the connection was killed (`KILL CONNECTION`); MySQL 8: closed for idling past `wait_timeout`.
  'ER_CONNECTION_KILLED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
]);

/** MySQL broke a deadlock by rolling this transaction back, so running it again is safe. */
const DEADLOCK = 'ER_LOCK_DEADLOCK';
/**
 * A statement waited `innodb_lock_wait_timeout` for a row lock. Retryable,
 * but not retried here: the wait already took that long (50 s by default),
 * so the caller, who may have a deadline, decides.
 */
const LOCK_WAIT_TIMEOUT = 'ER_LOCK_WAIT_TIMEOUT';

/**
 * The statement was stopped (`KILL QUERY`, a statement time limit) and rolled
 * back on its own; the connection stays usable, so running it again is safe.
 */
const QUERY_INTERRUPTED = 'ER_QUERY_INTERRUPTED';

const DEADLOCK_RETRIES = 4;

/** Where the store connects, for messages: `host:port`, never credentials. */
export function describeTarget(url: string | undefined): string {
  if (url === undefined) return 'the configured server';
  try {
    const parsed = new URL(url);
    return `${parsed.hostname || 'localhost'}:${parsed.port || '3306'}`;
  } catch {
    return 'the configured server';
  }
}

/** The driver's error code (`ECONNREFUSED`, `ER_LOCK_DEADLOCK`, …), if `error` carries one. */
export function driverCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

/**
 * Whether `error` is the jobs insert's failure on a taken id: its `ON DUPLICATE KEY UPDATE` sets `id` to NULL
 * when the row it met holds the same id, which the session's strict mode refuses (see sql/insert-jobs.ts).
 */
export function isTakenJobId(error: unknown): boolean {
  return driverCode(error) === 'ER_BAD_NULL_ERROR' && error instanceof Error && /'id'/.test(error.message);
}

/**
 * Turns a driver error into the `WorkqError` users see; the driver error is
 * kept as `cause` for logs, and no database message reaches the message.
 */
export function classifyMysqlError(error: unknown, target: string, operation: string): WorkqError {
  if (error instanceof WorkqError) return error;
  const code = driverCode(error);
  if ((code !== undefined && CONNECTION_CODES.has(code)) || isFatalWithoutCode(error)) {
    return new WorkqError(
      'UNAVAILABLE',
      `Cannot reach MySQL at ${target} (${code ?? 'connection closed'}); check that the server is running and reachable, then retry.`,
      { retryable: true, cause: error },
    );
  }
  if (code === 'ER_ACCESS_DENIED_ERROR' || code === 'ER_DBACCESS_DENIED_ERROR') {
    return new WorkqError(
      'UNAVAILABLE',
      `MySQL at ${target} refused the credentials in the store URL (${code}); check the user, password and grants.`,
      { retryable: false, cause: error },
    );
  }
  if (code === 'ER_BAD_DB_ERROR') {
    return new WorkqError(
      'UNAVAILABLE',
      `The database named in the store URL does not exist on MySQL at ${target}; create it first.`,
      { retryable: false, cause: error },
    );
  }
  if (code === LOCK_WAIT_TIMEOUT || code === DEADLOCK) {
    const what = code === DEADLOCK ? 'kept hitting deadlocks' : 'timed out waiting for a row lock';
    return new WorkqError('UNAVAILABLE', `MySQL at ${target} ${what} during ${operation}; retry.`, {
      retryable: true,
      cause: error,
    });
  }
  if (code === QUERY_INTERRUPTED) {
    return new WorkqError('UNAVAILABLE', `MySQL at ${target} interrupted ${operation}; retry.`, {
      retryable: true,
      cause: error,
    });
  }
  if (isPoolClosed(error)) {
    return new WorkqError('UNAVAILABLE', `The MySQL store is closed; ${operation} cannot run.`, {
      retryable: false,
      cause: error,
    });
  }
  return new WorkqError(
    'UNAVAILABLE',
    `The MySQL store at ${target} failed during ${operation}${code ? ` (${code})` : ''}; see the server log.`,
    { retryable: false, cause: error },
  );
}

/** mysql2 marks errors that leave a connection unusable `fatal`; those without a code are a closed socket. */
function isFatalWithoutCode(error: unknown): boolean {
  return error instanceof Error && driverCode(error) === undefined && 'fatal' in error && error.fatal === true;
}

function isPoolClosed(error: unknown): boolean {
  return error instanceof Error && /pool is closed/i.test(error.message);
}

/**
 * Thrown inside a transaction to roll it back on purpose, for an outcome the store answers rather than an
 * error (a refused change, a vanished key holder): `withDeadlockRetry` passes it on as it is, unclassified, so
 * the store method that ran the transaction can tell it by its class.
 */
export class RollBack extends Error {}

/**
 * Runs `work`, running it again when MySQL broke a deadlock by rolling it
 * back; any other error, or a deadlock past the last retry, is classified,
 * except a `RollBack`, which is passed on as it is.
 * Only for work that is safe to repeat after a rollback.
 */
export async function withDeadlockRetry<T>(target: string, operation: string, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (error instanceof RollBack) throw error;
      if (attempt > DEADLOCK_RETRIES || driverCode(error) !== DEADLOCK) {
        throw classifyMysqlError(error, target, operation);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}
