import { TRPCError } from '@trpc/server';
import { isWorkqErrorCode, WorkqError, type WorkqErrorCode } from '@workq/core';

type TrpcCode = TRPCError['code'];

/**
 * The one table from workq error codes to what the server answers with: the
 * tRPC code a procedure fails with, and the HTTP status of the plain HTTP
 * API, which is the status tRPC gives that code.
 */
export const STATUS_OF_ERROR = {
  VALIDATION: { trpc: 'BAD_REQUEST', http: 400 },
  UNAUTHORIZED: { trpc: 'UNAUTHORIZED', http: 401 },
  FORBIDDEN: { trpc: 'FORBIDDEN', http: 403 },
  NOT_FOUND: { trpc: 'NOT_FOUND', http: 404 },
  UNKNOWN_JOB: { trpc: 'NOT_FOUND', http: 404 },
  UNSUPPORTED_VERSION: { trpc: 'UNPROCESSABLE_CONTENT', http: 422 },
  LEASE_LOST: { trpc: 'CONFLICT', http: 409 },
  PAYLOAD_TOO_LARGE: { trpc: 'PAYLOAD_TOO_LARGE', http: 413 },
  CONFLICT: { trpc: 'CONFLICT', http: 409 },
  TIMEOUT: { trpc: 'TIMEOUT', http: 408 },
  UNAVAILABLE: { trpc: 'SERVICE_UNAVAILABLE', http: 503 },
  // Raised by the SDK (`handle.result()` of a dead job), never by the server; here because the table is total.
  JOB_FAILED: { trpc: 'CONFLICT', http: 409 },
} as const satisfies Record<WorkqErrorCode, { trpc: TrpcCode; http: number }>;

/** For errors raised by tRPC itself (bad JSON, body too large, batch too large). */
const WORKQ_CODE_OF_TRPC: Partial<Record<TrpcCode, WorkqErrorCode>> = {
  BAD_REQUEST: 'VALIDATION',
  PARSE_ERROR: 'VALIDATION',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  METHOD_NOT_SUPPORTED: 'VALIDATION',
  UNSUPPORTED_MEDIA_TYPE: 'VALIDATION',
  TIMEOUT: 'TIMEOUT',
  CONFLICT: 'CONFLICT',
};

/**
 * What a failed request was doing, which decides what an `UNAVAILABLE`
 * answer may promise: a `read` changed nothing; a write that lost its store
 * mid-way (a connection can drop during `COMMIT`) may or may not have been
 * stored, and what is safe next depends on the write.
 */
export type RequestKind = 'read' | 'enqueue' | 'claim' | 'ack' | 'write';

/** The kind of a tRPC call, by its type and procedure path. */
export function requestKindOf(type: string, path: string | undefined): RequestKind {
  // A subscription (job events) changes nothing: it is read again by subscribing again.
  if (type === 'query' || type === 'subscription') return 'read';
  if (path === 'jobs.enqueue' || path === 'jobs.enqueueMany') return 'enqueue';
  if (path === 'consumer.claim') return 'claim';
  if (path === 'consumer.complete') return 'ack';
  return 'write';
}

/** What is safe after a write whose outcome is unknown. */
const AFTER_UNKNOWN_WRITE: Readonly<Record<Exclude<RequestKind, 'read'>, string>> = {
  enqueue:
    'Retrying with the same job id (the SDK sends every job under one) or idempotencyKey is safe: it returns the job if it was stored (without either, a retry may enqueue it twice).',
  claim:
    'Claiming again is safe: jobs a lost claim leased are delivered again when their lease expires, and acks it carried that were stored are recognised as repeated.',
  ack: 'Retrying is safe: an ack that was stored is recognised as repeated.',
  write: "Check the job's state before repeating the request, unless doing it twice is harmless.",
};

/**
 * What a client may see of any error: a `WorkqError` keeps its code and
 * message; anything else becomes a generic `UNAVAILABLE`, with no stack and
 * no database text. An `UNAVAILABLE` message says what `kind` of request
 * may have changed (default: an unknown write).
 */
export function toClientError(error: unknown, kind: RequestKind = 'write'): WorkqError {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  if (cause instanceof WorkqError) {
    if (cause.code === 'UNAVAILABLE' && serverLimitOf(cause) === undefined) {
      return new WorkqError('UNAVAILABLE', publicUnavailableMessage(cause.retryable, kind), {
        retryable: cause.retryable,
      });
    }
    return cause;
  }
  if (error instanceof TRPCError) {
    const code = WORKQ_CODE_OF_TRPC[error.code];
    if (code === 'VALIDATION' && error.cause && 'issues' in error.cause) {
      return new WorkqError('VALIDATION', `Request is invalid: ${summarizeIssues(error.cause.issues)}`);
    }
    if (code) return new WorkqError(code, error.message);
  }
  const outcome =
    kind === 'read' ? 'nothing was changed' : `whether it changed anything is unknown. ${AFTER_UNKNOWN_WRITE[kind]}`;
  return new WorkqError('UNAVAILABLE', `The queue server hit an internal error; ${outcome}`, { retryable: true });
}

/**
 * A retryable `UNAVAILABLE` that says the server is at one of its limits
 * (`limit` names it, e.g. `maxEventStreams`): its message is the server's own,
 * so clients see it as it is, unlike a store failure's.
 */
export function serverAtLimit(limit: string, message: string): WorkqError {
  return new WorkqError('UNAVAILABLE', message, { retryable: true, details: { limit } });
}

/** The limit a `serverAtLimit` error names; `undefined` for any other error. */
export function serverLimitOf(error: unknown): string | undefined {
  if (!(error instanceof WorkqError) || error.code !== 'UNAVAILABLE') return undefined;
  const limit = (error.details as { limit?: unknown } | undefined)?.limit;
  return typeof limit === 'string' ? limit : undefined;
}

function publicUnavailableMessage(retryable: boolean, kind: RequestKind): string {
  const failure = retryable
    ? 'The job store could not be reached or dropped the request'
    : 'The job store failed to complete the request (see the server log)';
  if (kind === 'read') return `${failure}; nothing was changed.${retryable ? ' Try again shortly.' : ''}`;
  return `${failure}, so whether the change was stored is unknown. ${AFTER_UNKNOWN_WRITE[kind]}`;
}

function summarizeIssues(issues: unknown): string {
  if (!Array.isArray(issues)) return 'malformed input';
  return issues
    .slice(0, 5)
    .map(
      (issue: { path?: unknown[]; message?: string }) =>
        `${(issue.path ?? []).join('.') || '(input)'}: ${issue.message}`,
    )
    .join('; ');
}

export function isClientErrorCode(value: unknown): value is WorkqErrorCode {
  return isWorkqErrorCode(value);
}
