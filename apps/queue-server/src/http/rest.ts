import type { IncomingMessage, ServerResponse } from 'node:http';
import { type TraceContext, WorkqError } from '@workq/core';
import { TRACE_CONTEXT_LIMITS } from '@workq/core/engine';
import { z } from 'zod';
import { requireScope } from '../auth.ts';
import { STATUS_OF_ERROR, toClientError } from '../errors.ts';
import { checkPayloads, enqueueOptions, toEnqueueInput, version } from '../router/inputs.ts';
import type { ServerServices } from '../router/trpc.ts';
import { isJsonContentType } from './content-type.ts';
import { readBodyText } from './read-body.ts';

const restEnqueueBody = z.object({ version, payload: z.unknown(), options: enqueueOptions });

/**
 * Plain JSON over HTTP, for producers that are not TypeScript:
 * `POST /v1/jobs/<name>` with `{ "version", "payload", "options"? }` and
 * `content-type: application/json` (415 `VALIDATION` otherwise). Payloads
 * are validated as over tRPC: with the server's catalog when it has one,
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
    requireScope(principal, 'produce', jobName);
    const body = restEnqueueBody.safeParse(await readJson(req, services.options.limits.maxRequestBytes));
    if (!body.success) {
      throw new WorkqError(
        'VALIDATION',
        `Body must be {"version": <int>, "payload": <json>, "options"?: {...}}: ${body.error.issues[0]?.message}`,
      );
    }
    const traceContext = body.data.options?.traceContext ?? headerTraceContext(req);
    const options = traceContext ? { ...body.data.options, traceContext } : body.data.options;
    await checkPayloads(services, jobName, body.data.version, [body.data.payload]);
    const result = await services.engine.enqueue(
      toEnqueueInput(jobName, body.data.version, body.data.payload, options),
    );
    const warnings = services.registry.uncheckedWarnings(jobName, body.data.version);
    sendJson(res, result.created ? 201 : 200, warnings.length > 0 ? { ...result, warnings } : result);
  } catch (error) {
    const clientError = toClientError(error, 'enqueue');
    sendError(res, STATUS_OF_ERROR[clientError.code].http, clientError);
  }
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

function sendError(res: ServerResponse, status: number, error: WorkqError): void {
  sendJson(res, status, { error: { code: error.code, message: error.message, details: error.details } });
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
  const text = await readBodyText(req, maxBytes);
  try {
    return JSON.parse(text);
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
    requireScope(await services.authority.authenticate(req.headers.authorization), 'admin');
    const { contentType, body } = await services.metrics.render();
    res.writeHead(200, { 'content-type': contentType });
    res.end(body);
  } catch (error) {
    const clientError = toClientError(error, 'read');
    sendJson(res, STATUS_OF_ERROR[clientError.code].http, {
      error: { code: clientError.code, message: clientError.message },
    });
  }
}
