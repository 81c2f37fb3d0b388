import { WorkqError } from '../../errors.ts';

/** Error codes (Node's and SQLSTATE) that mean the server could not be reached or dropped the connection. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

/** node-postgres reports these connection failures with a message only, no code. */
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection not open/i;

function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}

function isConnectionFailure(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined && (CONNECTION_CODES.has(code) || code.startsWith('08'))) return true;
  if (error instanceof AggregateError) return error.errors.some(isConnectionFailure);
  return error instanceof Error && CONNECTION_MESSAGES.test(error.message);
}

/** SQLSTATE classes worth retrying as they are: 40 (serialization failure, deadlock) and 53 (insufficient resources). */
function isTransient(code: string | undefined): boolean {
  return code !== undefined && (code.startsWith('40') || code.startsWith('53'));
}

/**
 * The one place the PostgreSQL store turns driver errors into `WorkqError`s.
 * `target` names the server (`host:port`, or `PGlite`), never with a password.
 * Connection failures are retryable; anything else carries only its SQLSTATE,
 * never the database's own message (which can quote data).
 */
export function toWorkqError(error: unknown, target: string): WorkqError {
  if (error instanceof WorkqError) return error;
  const code = errorCode(error);
  if (isConnectionFailure(error)) {
    return new WorkqError(
      'UNAVAILABLE',
      `Cannot reach PostgreSQL at ${target}${code ? ` (${code})` : ''}: check that the server is running and the connection settings are right.`,
      { retryable: true, cause: error },
    );
  }
  const detail = code && /^[0-9A-Z]{5}$/.test(code) ? ` (SQLSTATE ${code})` : '';
  return new WorkqError('UNAVAILABLE', `A PostgreSQL store operation failed${detail}.`, {
    retryable: isTransient(code),
    cause: error,
  });
}

/** `host:port` of a connection string, for messages; never includes credentials. */
export function describeTarget(connection: { connectionString?: string; host?: string; port?: number }): string {
  if (connection.connectionString !== undefined) {
    try {
      const url = new URL(connection.connectionString);
      const host = decodeURIComponent(url.hostname) || url.searchParams.get('host') || 'localhost';
      return `${host}:${url.port || '5432'}`;
    } catch {
      return 'the configured connection string';
    }
  }
  return `${connection.host ?? 'localhost'}:${connection.port ?? 5432}`;
}

/** Whether `error` (as `toWorkqError` left it) is an insert's failure on a job id already taken: `jobs_pkey`. */
export function isTakenJobId(error: unknown): boolean {
  return isUniqueViolationOf(error, 'jobs_pkey');
}

/**
 * Whether `error` (as `toWorkqError` left it) is an insert's failure on a job id or an idempotency key already
 * taken: `jobs_pkey` or `jobs_idempotency_idx`.
 */
export function isTakenJobIdOrKey(error: unknown): boolean {
  return isUniqueViolationOf(error, 'jobs_pkey') || isUniqueViolationOf(error, 'jobs_idempotency_idx');
}

function isUniqueViolationOf(error: unknown, constraint: string): boolean {
  const cause = error instanceof WorkqError ? error.cause : error;
  return (
    typeof cause === 'object' &&
    cause !== null &&
    errorCode(cause) === '23505' &&
    'constraint' in cause &&
    cause.constraint === constraint
  );
}
