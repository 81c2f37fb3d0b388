import type { IncomingMessage, ServerResponse } from 'node:http';
import { WorkqError } from '@workq/core';
import { z } from 'zod';
import { requireScope } from '../auth.ts';
import { toClientError } from '../errors.ts';
import { checkPayloads, enqueueOptions, toEnqueueInput, version } from '../router/inputs.ts';
import type { ServerServices } from '../router/trpc.ts';
import { readBodyText } from './read-body.ts';

const HTTP_STATUS = {
  VALIDATION: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  UNKNOWN_JOB: 404,
  UNSUPPORTED_VERSION: 422,
  LEASE_LOST: 409,
  PAYLOAD_TOO_LARGE: 413,
  CONFLICT: 409,
  TIMEOUT: 408,
  UNAVAILABLE: 503,
} as const;

const restEnqueueBody = z.object({ version, payload: z.unknown(), options: enqueueOptions });

/**
 * Plain JSON over HTTP, for producers that are not TypeScript:
 * `POST /v1/jobs/<name>` with `{ "version", "payload", "options"? }`.
 * Payloads are validated against the registered schema, exactly as over tRPC.
 */
export async function handleRest(req: IncomingMessage, res: ServerResponse, services: ServerServices): Promise<void> {
  try {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const name = /^\/v1\/jobs\/([^/]+)$/.exec(url.pathname)?.[1];
    if (req.method !== 'POST' || name === undefined) {
      throw new WorkqError('NOT_FOUND', 'Unknown route: enqueue with POST /v1/jobs/<name>.');
    }
    const principal = await services.authority.authenticate(req.headers.authorization);
    const jobName = decodeURIComponent(name);
    requireScope(principal, 'produce', jobName);
    const body = restEnqueueBody.safeParse(await readJson(req, services.options.limits.maxRequestBytes));
    if (!body.success) {
      throw new WorkqError(
        'VALIDATION',
        `Body must be {"version": <int>, "payload": <json>, "options"?: {...}}: ${body.error.issues[0]?.message}`,
      );
    }
    const { options } = body.data;
    await checkPayloads(services, jobName, body.data.version, [body.data.payload]);
    const result = await services.engine.enqueue(
      toEnqueueInput(jobName, body.data.version, body.data.payload, options),
    );
    sendJson(res, result.created ? 201 : 200, result);
  } catch (error) {
    const clientError = toClientError(error);
    sendJson(res, HTTP_STATUS[clientError.code], {
      error: { code: clientError.code, message: clientError.message, details: clientError.details },
    });
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
    const clientError = toClientError(error);
    sendJson(res, HTTP_STATUS[clientError.code], { error: { code: clientError.code, message: clientError.message } });
  }
}
