import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { serverLimitOf } from './errors.ts';
import type { Logger } from './options.ts';

/**
 * What the server knows of the request a piece of work belongs to: kept in
 * an `AsyncLocalStorage` around each request, so whatever that request's
 * async work does later — a rejection nobody awaited, a failure deep in a
 * store — can be logged with the request it came from.
 */
export interface RequestRecord {
  /** Sent back as `x-request-id` on every answer, and in the body of every 5xx. */
  readonly id: string;
  readonly method: string;
  /** The URL path, without the query (a query may carry a subscription's input). */
  readonly path: string;
  readonly remoteAddress: string;
  /** The caller's subject, once authentication named one (a signed token's `sub`). */
  subject?: string;
  /**
   * The caller's key (`Principal.callerKey`), once authentication found one: whose share of the server's
   * request-body budget the request's body counts toward (http/body-budget.ts). Never logged.
   */
  callerKey?: string;
  /** Internal errors behind a 5xx answer (or a 5xx inside a batch or a stream), for its one log line. */
  readonly failures: string[];
  /**
   * The server limit that refused the request (`serverAtLimit`'s `details.limit`), when that was its 5xx: load
   * shed as meant, logged apart from failures (http/limit-refusals.ts).
   */
  refusedAt?: string;
  /** The server's logger: the process guard logs through the server the request came to. */
  readonly logger: Logger;
}

const storage = new AsyncLocalStorage<RequestRecord>();

/** The request the current async work belongs to; `undefined` outside any request. */
export function currentRequest(): RequestRecord | undefined {
  return storage.getStore();
}

/** Runs `work` (and every async continuation it starts) as part of `record`'s request. */
export function runInRequest<T>(record: RequestRecord, work: () => T): T {
  return storage.run(record, work);
}

/**
 * An incoming `x-request-id` a proxy or client chose is kept when it is
 * plainly an id (1–64 letters, digits, `.`, `_`, `:`, `-`), so one id follows
 * a request through every hop's logs; anything else is replaced.
 */
const WELL_FORMED_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** The id of a request: the caller's well-formed `x-request-id`, else a new random one. */
export function requestIdOf(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && WELL_FORMED_ID.test(incoming) ? incoming : randomUUID();
}

/** Notes who the current request comes from, once authenticated: its subject, and its caller key. */
export function notePrincipal(principal: { subject?: string | undefined; callerKey?: string | undefined }): void {
  const request = storage.getStore();
  if (!request) return;
  if (principal.subject !== undefined) request.subject = principal.subject;
  if (principal.callerKey !== undefined) request.callerKey = principal.callerKey;
}

/** The fields that name a request in a log line. */
export function requestFields(record: RequestRecord | undefined): Record<string, unknown> {
  if (!record) return {};
  return {
    requestId: record.id,
    method: record.method,
    path: record.path,
    remoteAddress: record.remoteAddress,
    ...(record.subject === undefined ? {} : { subject: record.subject }),
  };
}

/**
 * Notes an internal failure behind a 5xx answer of the current request (its
 * one log line names it), or the server limit that refused it, and returns
 * the request's id, for the answer.
 */
export function noteServerFailure(error: unknown): string | undefined {
  const request = storage.getStore();
  const limit = serverLimitOf(error);
  if (limit !== undefined) {
    if (request) request.refusedAt = limit;
  } else request?.failures.push(failureText(error));
  return request?.id;
}

/** An error and its causes, as one line for the log (never for a client). */
export function failureText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let hops = 0; current !== undefined && current !== null && hops < 5; hops++) {
    parts.push(String(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(' <- ');
}
