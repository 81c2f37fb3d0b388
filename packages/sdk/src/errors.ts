import { TRPCClientError } from '@trpc/client';
import { isWorkqErrorCode, WorkqError } from '@workq/core';

/** Throw from a handler to send the job dead at once, without the remaining attempts. */
export class PermanentError extends Error {
  override readonly name = 'PermanentError';
}

/** The error shape the server attaches to every failure. */
interface ServerErrorData {
  workqCode?: unknown;
  retryable?: unknown;
  details?: unknown;
  httpStatus?: unknown;
}

/** Turns whatever the transport threw into a `WorkqError` with a stable code. */
export function toWorkqError(error: unknown): WorkqError {
  if (error instanceof WorkqError) return error;
  // Raised on this side before the request went out (the token function failed), wrapped by the link.
  if (error instanceof TRPCClientError && error.cause instanceof WorkqError) return error.cause;
  if (error instanceof TRPCClientError) {
    const data = (error.data ?? {}) as ServerErrorData;
    if (isWorkqErrorCode(data.workqCode)) {
      return new WorkqError(data.workqCode, error.message, {
        retryable: data.retryable === true,
        details: data.details,
        cause: error,
      });
    }
    if (data.httpStatus === 413)
      return new WorkqError('PAYLOAD_TOO_LARGE', 'The request is larger than the server accepts.', { cause: error });
    return new WorkqError('UNAVAILABLE', `Cannot reach the queue server: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof Error && error.name === 'AbortError') {
    return new WorkqError('TIMEOUT', 'The request was aborted before the server answered.', { cause: error });
  }
  return new WorkqError('UNAVAILABLE', `Cannot reach the queue server: ${String(error)}`, {
    retryable: true,
    cause: error,
  });
}
