import { TRPCError } from '@trpc/server';
import { isWorkqErrorCode, WorkqError, type WorkqErrorCode } from '@workq/core';

type TrpcCode = TRPCError['code'];

/** The one table from workq error codes to tRPC (and so HTTP) codes. */
export const TRPC_CODE_OF: Readonly<Record<WorkqErrorCode, TrpcCode>> = Object.freeze({
  VALIDATION: 'BAD_REQUEST',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  UNKNOWN_JOB: 'NOT_FOUND',
  UNSUPPORTED_VERSION: 'UNPROCESSABLE_CONTENT',
  LEASE_LOST: 'CONFLICT',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  CONFLICT: 'CONFLICT',
  TIMEOUT: 'TIMEOUT',
  UNAVAILABLE: 'SERVICE_UNAVAILABLE',
});

/** For errors raised by tRPC itself (bad JSON, body too large, batch too large). */
const WORKQ_CODE_OF_TRPC: Partial<Record<TrpcCode, WorkqErrorCode>> = {
  BAD_REQUEST: 'VALIDATION',
  PARSE_ERROR: 'VALIDATION',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  METHOD_NOT_SUPPORTED: 'VALIDATION',
  TIMEOUT: 'TIMEOUT',
  CONFLICT: 'CONFLICT',
};

/**
 * What a client may see of any error: a `WorkqError` keeps its code and
 * message; anything else becomes a generic `UNAVAILABLE`, with no stack and
 * no database text.
 */
export function toClientError(error: unknown): WorkqError {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  if (cause instanceof WorkqError) {
    if (cause.code === 'UNAVAILABLE') {
      return new WorkqError('UNAVAILABLE', publicUnavailableMessage(cause), { retryable: cause.retryable });
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
  return new WorkqError(
    'UNAVAILABLE',
    'The queue server hit an internal error; the request was not completed. Try again.',
    {
      retryable: true,
    },
  );
}

function publicUnavailableMessage(error: WorkqError): string {
  return error.retryable
    ? 'The job store is unreachable right now; nothing was changed. Try again shortly.'
    : 'The job store failed to complete the request; nothing was changed.';
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
