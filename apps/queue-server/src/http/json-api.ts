import type { IncomingMessage, ServerResponse } from 'node:http';
import { WorkqError } from '@workq/core';
import type { z } from 'zod';
import type { ServerServices } from '../app/services.ts';
import { logAuthFailure, refusalDetail } from '../audit-log.ts';
import { currentRequest, noteServerFailure } from '../request-context.ts';
import { checkJsonDepth, readBodyBytes } from './read-body.ts';

/**
 * What the plain HTTP API's routes share: JSON bodies read within a limit and
 * checked against a schema, answers written as JSON, and errors answered as
 * `{ "error": { code, message, details?, requestId? } }`.
 */

/**
 * The request's JSON body, at most `maxBytes` (`PAYLOAD_TOO_LARGE`), parsed by
 * `schema`: `VALIDATION` naming the first field wrong and the shape expected
 * (`expected`); `VALIDATION` too for a body that is not JSON.
 */
export async function readJsonBody<T extends z.ZodType>(
  req: IncomingMessage,
  maxBytes: number,
  schema: T,
  expected: string,
): Promise<z.output<T>> {
  const body = await readBodyBytes(req, maxBytes);
  checkJsonDepth(body);
  let value: unknown;
  try {
    value = JSON.parse(body.toString());
  } catch {
    throw new WorkqError('VALIDATION', 'Request body is not valid JSON.');
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const [issue] = parsed.error.issues;
  const at = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  throw new WorkqError('VALIDATION', `Body must be ${expected}: ${at}${issue?.message ?? 'invalid'}`);
}

/** A request refused for who sent it goes to the audit trail (audit-log.ts). */
export function auditRefusal(services: ServerServices, req: IncomingMessage, error: WorkqError): void {
  if (error.code !== 'UNAUTHORIZED' && error.code !== 'FORBIDDEN') return;
  const action = `${req.method} ${(req.url ?? '/').split('?')[0]}`;
  const detail = refusalDetail(error.message, req.headers.authorization);
  logAuthFailure(services.options.logger, currentRequest(), { action, reason: error.code, detail });
}

/** Answers `error`; a 5xx also carries the request's id, and its internal cause goes to the request's log line. */
export function sendError(res: ServerResponse, status: number, error: WorkqError, internal?: unknown): void {
  const requestId = status >= 500 ? noteServerFailure(internal ?? error) : undefined;
  sendJson(res, status, { error: { code: error.code, message: error.message, details: error.details, requestId } });
}

/**
 * Writes `body` as JSON. Values JSON has no form for are written as
 * `JSON.stringify` writes them, but a bigint, which is written as its decimal
 * text (a payload enqueued through the SDK may hold one).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body, (_key, value) => (typeof value === 'bigint' ? value.toString() : value));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A signal that aborts when the client goes away before its answer is written (a long poll stops waiting). */
export function abortOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableEnded) controller.abort();
  });
  return controller.signal;
}
