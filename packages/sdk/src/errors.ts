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
    return unreachable(error.message, error);
  }
  if (error instanceof Error && error.name === 'AbortError') {
    return new WorkqError('TIMEOUT', 'The request was aborted before the server answered.', { cause: error });
  }
  return unreachable(String(error), error);
}

function unreachable(reason: string, cause: unknown): WorkqError {
  const outcome = neverSent(cause) ? 'nothing was sent' : 'the server may have received the request';
  return new WorkqError('UNAVAILABLE', `Cannot reach the queue server (${reason}); ${outcome}.`, {
    retryable: true,
    cause,
  });
}

/** A request that got no answer within `limitMs`: the server may have acted on it all the same. */
export function timedOut(limitMs: number, cause: unknown): WorkqError {
  return new WorkqError(
    'TIMEOUT',
    `The queue server did not answer within ${limitMs} ms; it may have acted on the request all the same.`,
    { retryable: true, cause },
  );
}

/** Socket errors that mean the connection was never made, so the request never left this process. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether a failure shows that the request never reached the server: the
 * connection was refused or the host not found (on Node; a browser's `fetch`
 * does not say, so there this is `false`).
 */
export function neverSent(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === 'string' && NOT_CONNECTED.has(code)) return true;
    current = current.cause;
  }
  return false;
}
