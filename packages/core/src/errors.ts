/**
 * The closed set of error codes a workq user can see. Each code is stable:
 * programs branch on it, people read the message.
 */
export const WORKQ_ERROR_CODES = [
  'VALIDATION',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'UNKNOWN_JOB',
  'UNSUPPORTED_VERSION',
  'LEASE_LOST',
  'PAYLOAD_TOO_LARGE',
  'CONFLICT',
  'TIMEOUT',
  'UNAVAILABLE',
  'JOB_FAILED',
] as const;

export type WorkqErrorCode = (typeof WORKQ_ERROR_CODES)[number];

export interface WorkqErrorOptions {
  /** The underlying error, kept for logs; never sent to clients. */
  cause?: unknown;
  /** Whether the same call may succeed if tried again later (e.g. a store that is briefly unreachable). */
  retryable?: boolean | undefined;
  /** Structured, client-safe details (e.g. validation issues). */
  details?: unknown;
}

/** The one error type workq raises to its users. */
export class WorkqError extends Error {
  override readonly name = 'WorkqError';
  readonly code: WorkqErrorCode;
  readonly retryable: boolean;
  readonly details: unknown;

  constructor(code: WorkqErrorCode, message: string, options: WorkqErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? code === 'UNAVAILABLE';
    this.details = options.details;
  }
}

export function isWorkqError(value: unknown, code?: WorkqErrorCode): value is WorkqError {
  return value instanceof WorkqError && (code === undefined || value.code === code);
}

export function isWorkqErrorCode(value: unknown): value is WorkqErrorCode {
  return typeof value === 'string' && (WORKQ_ERROR_CODES as readonly string[]).includes(value);
}
