import type { IncomingMessage, ServerResponse } from 'node:http';
import { type TraceContext, WorkqError } from '@workq/core';
import { TRACE_CONTEXT_LIMITS } from '@workq/core/engine';
import { z } from 'zod';
import { enqueueJob } from '../app/enqueue.ts';
import type { ServerServices } from '../app/services.ts';
import { logAuthFailure, refusalDetail } from '../audit-log.ts';
import { requireScope } from '../auth.ts';
import { STATUS_OF_ERROR, toClientError } from '../errors.ts';
import { currentRequest, noteServerFailure } from '../request-context.ts';
import { enqueueOptions, version } from '../router/inputs.ts';
import { isJsonContentType } from './content-type.ts';
import { checkJsonDepth, readBodyBytes } from './read-body.ts';

const restEnqueueBody = z.object({ version, payload: z.unknown(), options: enqueueOptions });

/**
 * Plain JSON over HTTP, for producers that are not TypeScript:
 * `POST /v1/jobs/<name>` with `{ "version", "payload", "options"? }` and
 * `content-type: application/json` (415 `VALIDATION` otherwise). The job is
 * enqueued as `jobs.enqueue` enqueues it: handed to a consumer waiting on
 * this server, merged with concurrent inserts, counted in the metrics.
 * Payloads are validated as over tRPC: with the server's catalog when it has one,
 * otherwise against the registered JSON Schema, in which case the answer's
 * `warnings` name the constraints that schema cannot express (not checked).
 * Without `options.traceContext`, the job keeps the request's W3C `traceparent`
 * (and `tracestate`) headers, as an instrumented HTTP client sends them.
 */
export async function handleRest(req: IncomingMessage, res: ServerResponse, services: ServerServices): Promise<void> {
  try {
    const jobName = routeOf(req);
    if (!isJsonContentType(req.headers['content-type'])) {
      req.resume();
      return sendError(res, 415, new WorkqError('VALIDATION', NOT_JSON));
    }
    const principal = await services.authority.authenticate(req.headers.authorization);
    noteSubject(principal.subject);
    requireScope(principal, 'produce', jobName);
    const body = restEnqueueBody.safeParse(await readJson(req, restBodyLimit(services.options.limits)));
    if (!body.success) {
      throw new WorkqError(
        'VALIDATION',
        `Body must be {"version": <int>, "payload": <json>, "options"?: {...}}: ${body.error.issues[0]?.message}`,
      );
    }
    const traceContext = body.data.options?.traceContext ?? headerTraceContext(req);
    const options = traceContext ? { ...body.data.options, traceContext } : body.data.options;
    const result = await enqueueJob(services, jobName, body.data.version, body.data.payload, options);
    const warnings = services.registry.uncheckedWarnings(jobName, body.data.version);
    sendJson(res, result.created ? 201 : 200, warnings.length > 0 ? { ...result, warnings } : result);
  } catch (error) {
    const clientError = toClientError(error, 'enqueue');
    auditRefusal(services, req, clientError);
    sendError(res, STATUS_OF_ERROR[clientError.code].http, clientError, error);
  }
}

/**
 * The largest body of one plain HTTP enqueue, checked before it is parsed:
 * one payload (up to `maxPayloadBytes` as stored; twice that leaves room for
 * the spaces of pretty-printed JSON) and its options (64 KiB).
 */
function restBodyLimit(limits: ServerServices['options']['limits']): number {
  return Math.min(limits.maxRequestBytes, 2 * limits.maxPayloadBytes + 64 * 1024);
}

/** Keeps the caller's subject on the request, for its log lines. */
function noteSubject(subject: string | undefined): void {
  const request = currentRequest();
  if (request && subject !== undefined) request.subject = subject;
}

/** A request refused for who sent it goes to the audit trail (audit-log.ts). */
function auditRefusal(services: ServerServices, req: IncomingMessage, error: WorkqError): void {
  if (error.code !== 'UNAUTHORIZED' && error.code !== 'FORBIDDEN') return;
  const action = `${req.method} ${(req.url ?? '/').split('?')[0]}`;
  const detail = refusalDetail(error.message, req.headers.authorization);
  logAuthFailure(services.options.logger, currentRequest(), { action, reason: error.code, detail });
}

/** The request's W3C trace context headers, when they fit what a job stores (others are ignored, not refused). */
function headerTraceContext(req: IncomingMessage): TraceContext | undefined {
  const fits = (value: unknown): value is string =>
    typeof value === 'string' && value.length > 0 && value.length <= TRACE_CONTEXT_LIMITS.valueLength;
  const { traceparent, tracestate } = req.headers;
  if (!fits(traceparent)) return undefined;
  return fits(tracestate) ? { traceparent, tracestate } : { traceparent };
}

const NOT_JSON = 'The request body must be JSON, sent with content-type: application/json.';

/** Answers `error`; a 5xx also carries the request's id, and its internal cause goes to the request's log line. */
function sendError(res: ServerResponse, status: number, error: WorkqError, internal?: unknown): void {
  const requestId = status >= 500 ? noteServerFailure(internal ?? error) : undefined;
  sendJson(res, status, { error: { code: error.code, message: error.message, details: error.details, requestId } });
}

/** The job name of a `POST /v1/jobs/<name>` request: `NOT_FOUND` for another route, `VALIDATION` for a name that does not decode. */
function routeOf(req: IncomingMessage): string {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const name = /^\/v1\/jobs\/([^/]+)$/.exec(path)?.[1];
  if (req.method !== 'POST' || name === undefined) {
    throw new WorkqError('NOT_FOUND', 'Unknown route: enqueue with POST /v1/jobs/<name>.');
  }
  try {
    return decodeURIComponent(name);
  } catch {
    throw new WorkqError('VALIDATION', 'The job name in the path is not valid percent-encoding (RFC 3986).');
  }
}

async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const body = await readBodyBytes(req, maxBytes);
  checkJsonDepth(body);
  try {
    return JSON.parse(body.toString());
  } catch {
    throw new WorkqError('VALIDATION', 'Request body is not valid JSON.');
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** `GET /metrics` in Prometheus text format; needs an `admin` token when the server has tokens. */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, services: ServerServices): Promise<void> {
  try {
    const principal = await services.authority.authenticate(req.headers.authorization);
    noteSubject(principal.subject);
    requireScope(principal, 'admin');
    const { contentType, body } = await services.metrics.render();
    res.writeHead(200, { 'content-type': contentType });
    res.end(body);
  } catch (error) {
    const clientError = toClientError(error, 'read');
    auditRefusal(services, req, clientError);
    sendError(res, STATUS_OF_ERROR[clientError.code].http, clientError, error);
  }
}
