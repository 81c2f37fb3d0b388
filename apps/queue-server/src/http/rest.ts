import type { IncomingMessage, ServerResponse } from 'node:http';
import { type TraceContext, WorkqError } from '@workq/core';
import { TRACE_CONTEXT_LIMITS } from '@workq/core/engine';
import { z } from 'zod';
import { childTypes, enqueueJobOrFlow } from '../app/flows.ts';
import { listSchemas } from '../app/schemas.ts';
import type { ServerServices } from '../app/services.ts';
import { requireScope } from '../auth.ts';
import { type RequestKind, STATUS_OF_ERROR, toClientError } from '../errors.ts';
import { notePrincipal } from '../request-context.ts';
import { jsonChildJob, jsonEnqueueOptions, version } from '../router/inputs.ts';
import { isJsonContentType } from './content-type.ts';
import { auditRefusal, readJsonBody, sendError, sendJson } from './json-api.ts';
import { type DescribedJobType, openApiDocument } from './openapi.ts';
import {
  cancelRoute,
  claimRoute,
  completeRoute,
  extendRoute,
  failRoute,
  type RestAnswer,
  type RestCall,
  rateLimitedRoute,
  snoozeRoute,
  statusRoute,
  stopWaitingRoute,
} from './worker-routes.ts';

export { sendJson } from './json-api.ts';

const restEnqueueBody = z
  .object({
    version,
    payload: z.unknown(),
    options: jsonEnqueueOptions,
    children: z.array(jsonChildJob).optional(),
  })
  .strict();

/** A route of the plain HTTP API: its method, its path with one parameter, whether it takes a JSON body. */
interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  /** What a failure of this call may have changed (see `toClientError`). */
  kind: RequestKind;
  /** Whether the call sends a JSON body (refused with 415 otherwise). */
  body: boolean;
  serve: (call: RestCall) => Promise<RestAnswer>;
}

const ROUTES: readonly Route[] = [
  { method: 'GET', pattern: /^\/v1\/openapi\.json$/, kind: 'read', body: false, serve: serveOpenApi },
  { method: 'POST', pattern: /^\/v1\/jobs\/([^/]+)$/, kind: 'enqueue', body: true, serve: enqueueRoute },
  { method: 'POST', pattern: /^\/v1\/jobs\/([^/]+)\/claim$/, kind: 'claim', body: true, serve: claimRoute },
  { method: 'GET', pattern: /^\/v1\/job\/([^/]+)$/, kind: 'read', body: false, serve: statusRoute },
  { method: 'POST', pattern: /^\/v1\/job\/([^/]+)\/complete$/, kind: 'ack', body: true, serve: completeRoute },
  { method: 'POST', pattern: /^\/v1\/job\/([^/]+)\/fail$/, kind: 'write', body: true, serve: failRoute },
  { method: 'POST', pattern: /^\/v1\/job\/([^/]+)\/extend$/, kind: 'write', body: true, serve: extendRoute },
  { method: 'POST', pattern: /^\/v1\/job\/([^/]+)\/snooze$/, kind: 'write', body: true, serve: snoozeRoute },
  {
    method: 'POST',
    pattern: /^\/v1\/job\/([^/]+)\/rate-limited$/,
    kind: 'write',
    body: true,
    serve: rateLimitedRoute,
  },
  { method: 'POST', pattern: /^\/v1\/job\/([^/]+)\/cancel$/, kind: 'write', body: false, serve: cancelRoute },
  {
    method: 'POST',
    pattern: /^\/v1\/workers\/([^/]+)\/stop-waiting$/,
    kind: 'write',
    body: false,
    serve: stopWaitingRoute,
  },
];

/**
 * The plain HTTP API under `/v1/` (docs/http-api.md), described by the
 * OpenAPI document it serves at `/v1/openapi.json`: enqueue, and what a
 * worker in any language needs (worker-routes.ts). Every call is
 * authenticated first; a route with a body takes `content-type:
 * application/json` (415 `VALIDATION` otherwise); errors are answered as
 * `{ "error": { code, message } }` with the status of their code
 * (`STATUS_OF_ERROR`), never with a stack or a store's text.
 */
export async function handleRest(req: IncomingMessage, res: ServerResponse, services: ServerServices): Promise<void> {
  let kind: RequestKind = 'write';
  try {
    const { route, param } = routeOf(req);
    kind = route.kind;
    if (route.body && !isJsonContentType(req.headers['content-type'])) {
      req.resume();
      return sendError(res, 415, new WorkqError('VALIDATION', NOT_JSON));
    }
    const principal = await services.authority.authenticate(req.headers.authorization);
    notePrincipal(principal);
    const { status, body } = await route.serve({ req, res, services, principal, param });
    if (!res.destroyed) sendJson(res, status, body);
  } catch (error) {
    const clientError = toClientError(error, kind);
    auditRefusal(services, req, clientError);
    if (!res.destroyed) sendError(res, STATUS_OF_ERROR[clientError.code].http, clientError, error);
  }
}

/**
 * `POST /v1/jobs/<name>` with `{ "version", "payload", "options"? }`, for
 * producers that are not TypeScript. The job is
 * enqueued as `jobs.enqueue` enqueues it: handed to a consumer waiting on
 * this server, merged with concurrent inserts, counted in the metrics.
 * Payloads are validated as over tRPC: with the server's catalog when it has one,
 * otherwise against the registered JSON Schema, in which case the answer's
 * `warnings` name the constraints that schema cannot express (not checked).
 * Without `options.traceContext`, the job keeps the request's W3C `traceparent`
 * (and `tracestate`) headers, as an instrumented HTTP client sends them.
 */
async function enqueueRoute({ req, services, principal, param: jobName }: RestCall): Promise<RestAnswer> {
  requireScope(principal, 'produce', jobName);
  const body = await readJsonBody(
    req,
    restBodyLimit(services.options.limits),
    restEnqueueBody,
    '{"version": <int>, "payload": <json>, "options"?: {...}, "children"?: [...]}',
  );
  // A flow's children are enqueued too: each one's type needs the token's produce scope as well.
  for (const type of childTypes(body.children)) requireScope(principal, 'produce', type);
  const traceContext = body.options?.traceContext ?? headerTraceContext(req);
  const options = traceContext ? { ...body.options, traceContext } : body.options;
  const result = await enqueueJobOrFlow(services, jobName, body.version, body.payload, options, body.children);
  const warnings = services.registry.uncheckedWarnings(jobName, body.version);
  return { status: result.created ? 201 : 200, body: warnings.length > 0 ? { ...result, warnings } : result };
}

/** `GET /v1/openapi.json`: the document, with the schemas of the job types the caller may use (`listSchemas`). */
async function serveOpenApi({ services, principal }: RestCall): Promise<RestAnswer> {
  const entries = await listSchemas(services, principal, undefined);
  const catalog = services.options.jobs;
  const types = new Map<string, DescribedJobType>();
  for (const { name, version: jobVersion, jsonSchema } of entries) {
    const result = catalog?.[name]?.result;
    const type = types.get(name) ?? { name, payloads: [], result: result && resultJsonSchema(result) };
    types.set(name, { ...type, payloads: [...type.payloads, { version: jobVersion, jsonSchema }] });
  }
  return { status: 200, body: openApiDocument([...types.values()]) };
}

/** What a handler returns, as JSON Schema (the input side: what a worker sends to complete). */
function resultJsonSchema(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}

/**
 * The largest body of one plain HTTP enqueue, checked before it is parsed:
 * one payload (up to `maxPayloadBytes` as stored; twice that leaves room for
 * the spaces of pretty-printed JSON) and its options (64 KiB).
 */
function restBodyLimit(limits: ServerServices['options']['limits']): number {
  return Math.min(limits.maxRequestBytes, 2 * limits.maxPayloadBytes + 64 * 1024);
}

/** The request's W3C trace context headers, when they fit what a job stores (others are ignored, not refused). */
function headerTraceContext(req: IncomingMessage): TraceContext | undefined {
  const fits = (value: unknown): value is string =>
    typeof value === 'string' && value.length > 0 && value.length <= TRACE_CONTEXT_LIMITS.valueLength;
  const { traceparent, tracestate } = req.headers;
  if (!fits(traceparent)) return undefined;
  return fits(tracestate) ? { traceparent, tracestate } : { traceparent };
}

/** The route of a request and its path parameter, decoded: `NOT_FOUND` for no route, `VALIDATION` for a parameter that does not decode. */
function routeOf(req: IncomingMessage): { route: Route; param: string } {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  for (const route of ROUTES) {
    const encoded = route.method === req.method ? route.pattern.exec(path) : null;
    if (!encoded) continue;
    try {
      return { route, param: decodeURIComponent(encoded[1] ?? '') };
    } catch {
      throw new WorkqError('VALIDATION', 'The path holds text that is not valid percent-encoding (RFC 3986).');
    }
  }
  throw new WorkqError(
    'NOT_FOUND',
    `Unknown route: ${req.method} ${path}. The routes are described at GET /v1/openapi.json.`,
  );
}

const NOT_JSON = 'The request body must be JSON, sent with content-type: application/json.';

/** `GET /metrics` in Prometheus text format; needs an `admin` token when the server has tokens. */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, services: ServerServices): Promise<void> {
  try {
    const principal = await services.authority.authenticate(req.headers.authorization);
    notePrincipal(principal);
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
