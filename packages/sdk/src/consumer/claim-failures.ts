import { WorkqError } from '@workq/core';
import type { Logger } from '../logger.ts';

/** Socket and TLS error codes, by what the person running the worker should check. */
const REFUSED = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);
const NO_HOST = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|EPROTO$|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_)/;

/** The first `code` on an error's cause chain that is a string. */
function causeCode(error: unknown): string | undefined {
  let current = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === 'string' && !(current instanceof WorkqError)) return code;
    current = current.cause;
  }
  return undefined;
}

/** What to check when `url` cannot be reached with `error`, as a person reads it. */
export function whatToCheck(url: string, error: unknown): string {
  const code = causeCode(error);
  if (code && REFUSED.has(code)) {
    return `nothing answers at ${url} (${code}): is the queue server running, and on that host and port?`;
  }
  if (code && NO_HOST.has(code)) return `the host of ${url} cannot be found (${code}): is the URL right?`;
  if (code && TLS_CODE.test(code)) {
    return `TLS failed (${code}): is ${url} an https URL to a plain-http server, or is its certificate one this process does not trust?`;
  }
  if (error instanceof WorkqError && error.code === 'TIMEOUT') {
    return `${url} did not answer in time: is the queue server overloaded, or is a proxy in the way?`;
  }
  return `is the queue server running, is ${url} its URL (host, port, http or https), and is nothing else answering there?`;
}

/** Whether the server refused the token itself (not a token function that failed before anything was sent). */
function refusedToken(error: unknown): error is WorkqError {
  return (
    error instanceof WorkqError && (error.code === 'UNAUTHORIZED' || error.code === 'FORBIDDEN') && !error.retryable
  );
}

/** Whether `error` says the server could not be reached or did not answer, rather than what it answered. */
function unreachable(error: unknown): boolean {
  return error instanceof WorkqError && (error.code === 'UNAVAILABLE' || error.code === 'TIMEOUT');
}

export interface ClaimFailuresDeps {
  logger: Logger;
  url: string;
  /** Who is speaking, e.g. `worker for "imageConvert"`. */
  who: string;
  /** The caller's own handler: it then gets every failure, and the logger none of them. */
  onError: ((error: unknown) => void) | undefined;
  /** Whether the token is a function, asked again for each request, so a refused token may be a stale one. */
  tokenRefreshes: boolean;
}

/**
 * What a worker does when a claim, or the catalog registration before it,
 * fails. A refused token stops the worker: retrying cannot help, and a
 * worker that spins on it hides the mistake (a token function's token is
 * tried once more, fresh). Anything else is retried, and said once per
 * outage, however many retries it takes, with what to check; once claims
 * get through again, that is said too.
 */
export class ClaimFailures {
  private since: number | undefined;
  private lastCode: string | undefined;
  private refreshed = false;

  constructor(private readonly deps: ClaimFailuresDeps) {}

  /** A claim failed: resolves to the error that stops the worker, or `undefined` to try again after a backoff. */
  failed(error: unknown): WorkqError | undefined {
    if (refusedToken(error)) {
      if (error.code === 'FORBIDDEN' || !this.deps.tokenRefreshes || this.refreshed) return this.stopping(error);
      this.refreshed = true;
      if (this.deps.onError) this.deps.onError(error);
      else
        this.deps.logger.info(
          `The ${this.deps.who} had its token refused; it asks the token function for a fresh one.`,
        );
      return undefined;
    }
    if (this.deps.onError) {
      this.deps.onError(error);
      return undefined;
    }
    const code = error instanceof WorkqError ? error.code : 'UNKNOWN';
    if (this.since !== undefined && code === this.lastCode) return undefined;
    this.since ??= Date.now();
    this.lastCode = code;
    const { logger, url, who } = this.deps;
    const message = error instanceof Error ? error.message : String(error);
    if (unreachable(error)) {
      logger.warn(
        `The ${who} cannot reach the queue server: ${whatToCheck(url, error)} It keeps trying, and says so here when it is back. (${message})`,
        { url },
      );
    } else {
      logger.warn(`The ${who} cannot claim jobs, and keeps trying: ${message}`, { url, error });
    }
    return undefined;
  }

  /** A claim got its answer: an outage under way has ended. */
  succeeded(): void {
    this.refreshed = false;
    if (this.since === undefined) return;
    const seconds = ((Date.now() - this.since) / 1000).toFixed(1);
    this.since = undefined;
    this.lastCode = undefined;
    this.deps.logger.info(`The ${this.deps.who} reached the queue server again, after ${seconds} s.`, {
      url: this.deps.url,
    });
  }

  private stopping(error: WorkqError): WorkqError {
    const check =
      error.code === 'UNAUTHORIZED'
        ? ` Check the token given to createClient: the server at ${this.deps.url} does not accept it.`
        : '';
    return new WorkqError(error.code, `The ${this.deps.who} stopped: ${error.message}${check}`, {
      cause: error,
      details: error.details,
    });
  }
}
