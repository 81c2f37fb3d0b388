import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type AnyTRPCRouter,
  callTRPCProcedure,
  getTRPCErrorFromUnknown,
  getTRPCErrorShape,
  TRPCError,
  transformTRPCResponse,
} from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { WorkqError } from '@workq/core';
import { isJsonContentType } from './content-type.ts';
import { checkJsonDepth, readBodyBytes } from './read-body.ts';

export interface TrpcMutationOptions<TContext> {
  router: AnyTRPCRouter;
  /** Where procedure paths start, e.g. `/trpc/`. */
  basePath: string;
  maxBodySize: number;
  /**
   * A smaller body limit for some procedures, checked before anything is
   * decoded: a single enqueue carries one payload, so its body is held to
   * what one payload may take rather than to `maxBodySize`.
   */
  maxBodySizeOf?: (path: string) => number;
  createContext: (req: IncomingMessage) => TContext;
  onError: (opts: { error: TRPCError; path: string }) => void;
}

/**
 * Serves a single, unbatched tRPC mutation (`POST /trpc/<path>` with a JSON
 * body) straight from Node's request and response, through tRPC's own
 * procedure call, error shape and response transform: the same bytes on the
 * wire as tRPC's standalone adapter, without building a Fetch `Request` and
 * `Response` for every call, which cost as much server time as an enqueue's
 * insert. A POST whose body is not JSON (`content-type` other than
 * `application/json`, such as the form data and octet streams tRPC's
 * adapter would take) is refused here, 415 with workq code `VALIDATION`.
 * The handler returns `false` for anything else (queries, batches), which
 * the standalone adapter then serves.
 */
export function createTrpcMutationHandler<TContext>(
  options: TrpcMutationOptions<TContext>,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { router, basePath, maxBodySize } = options;
  const config = router._def._config;
  const procedures = router._def.procedures as Record<string, { _def: { type: string } } | undefined>;

  return (req, res) => {
    if (req.method !== 'POST' || !req.url?.startsWith(basePath)) return false;
    if (!isJsonContentType(req.headers['content-type'])) {
      req.resume();
      sendTrpcError(router, res, new TRPCError({ code: 'UNSUPPORTED_MEDIA_TYPE', message: NOT_JSON }));
      return true;
    }
    if (req.url.includes('?')) return false;
    const path = procedurePath(req.url.slice(basePath.length));
    if (path === undefined || procedures[path]?._def.type !== 'mutation') return false;
    void respond(path, req, res);
    return true;
  };

  async function respond(path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const signal = abortOnDisconnect(req, res);
    let ctx: TContext | undefined;
    let input: unknown;
    let json: string;
    let status = 200;
    try {
      ctx = options.createContext(req);
      // Read when the procedure asks for its input (after authentication), as tRPC's adapter does; read once,
      // so a middleware may ask for it again (the audit trail names an admin action's target).
      let read: Promise<unknown> | undefined;
      const getRawInput = () => {
        read ??= readInput(path, req);
        return read;
      };
      const readInput = async (path: string, req: IncomingMessage) => {
        try {
          const body = await readBodyBytes(req, options.maxBodySizeOf?.(path) ?? maxBodySize);
          checkJsonDepth(body);
          input = body.length === 0 ? undefined : config.transformer.input.deserialize(JSON.parse(body.toString()));
          return input;
        } catch (cause) {
          // A refused size is the server's own error; the procedure's error mapping gives it its status.
          if (cause instanceof TRPCError || cause instanceof WorkqError) throw cause;
          const message = cause instanceof Error ? cause.message : 'Invalid input';
          throw new TRPCError({ code: 'BAD_REQUEST', message, cause });
        }
      };
      const data = await callTRPCProcedure({ router, path, getRawInput, ctx, type: 'mutation', signal, batchIndex: 0 });
      json = JSON.stringify(transformTRPCResponse(config, { result: { data } }));
    } catch (cause) {
      const error = getTRPCErrorFromUnknown(cause);
      options.onError({ error, path });
      status = getHTTPStatusCodeFromError(error);
      const shape = getTRPCErrorShape({ config, error, type: 'mutation', path, input, ctx });
      json = JSON.stringify(transformTRPCResponse(config, { error: shape }));
    }
    if (res.destroyed) return;
    // Appended, so a `vary` set before (CORS's `origin`) is kept.
    res.appendHeader('vary', 'trpc-accept, accept');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(json);
  }
}

/** Answers with `error` in tRPC's error shape, before any procedure is called. */
function sendTrpcError(router: AnyTRPCRouter, res: ServerResponse, error: TRPCError): void {
  const config = router._def._config;
  const shape = getTRPCErrorShape({
    config,
    error,
    type: 'unknown',
    path: undefined,
    input: undefined,
    ctx: undefined,
  });
  const json = JSON.stringify(transformTRPCResponse(config, { error: shape }));
  res.writeHead(getHTTPStatusCodeFromError(error), { 'content-type': 'application/json' });
  res.end(json);
}

/**
 * For the POSTs tRPC's standalone adapter serves (batches): reads the body
 * up to `maxBodySize` and counts its nesting (`checkJsonDepth`) before tRPC
 * parses it, then hands the text to the adapter as `req.body`. Resolves
 * `true` when it answered the request itself, with the error in tRPC's shape.
 */
export async function checkTrpcBody(
  router: AnyTRPCRouter,
  maxBodySize: number,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> {
  if (req.method !== 'POST') return false;
  try {
    const body = await readBodyBytes(req, maxBodySize);
    checkJsonDepth(body);
    (req as IncomingMessage & { body?: string }).body = body.toString();
    return false;
  } catch (cause) {
    const code =
      cause instanceof WorkqError && cause.code === 'PAYLOAD_TOO_LARGE' ? 'PAYLOAD_TOO_LARGE' : 'BAD_REQUEST';
    sendTrpcError(
      router,
      res,
      new TRPCError({ code, message: cause instanceof Error ? cause.message : 'Invalid body', cause }),
    );
    return true;
  }
}

const NOT_JSON = 'The request body must be JSON, sent with content-type: application/json.';

/** The procedure path in a URL path, or `undefined` when it does not decode. */
export function procedurePath(encoded: string): string | undefined {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
}

/** A signal that aborts when the client goes away before the response is written, as tRPC's adapters do. */
export function abortOnDisconnect(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  const onClose = () => {
    req.off('aborted', onAborted);
    if (!res.writableEnded) controller.abort();
  };
  const onAborted = () => {
    res.off('close', onClose);
    controller.abort();
  };
  res.once('close', onClose);
  req.once('aborted', onAborted);
  return controller.signal;
}
