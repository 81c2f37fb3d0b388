import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type AnyTRPCProcedure,
  type AnyTRPCRouter,
  getTRPCErrorFromUnknown,
  getTRPCErrorShape,
  TRPCError,
  type TRPCProcedureType,
  transformTRPCResponse,
} from '@trpc/server';
import { getHTTPStatusCode, getHTTPStatusCodeFromError } from '@trpc/server/http';
import { WorkqError } from '@workq/core';
import { isJsonContentType } from './content-type.ts';
import { checkJsonDepth, readBodyBytes } from './read-body.ts';
import { runProcedure } from './run-procedure.ts';
import { streamEvents } from './server-sent-events.ts';

export interface TrpcHandlerOptions<TContext> {
  router: AnyTRPCRouter;
  /** Where procedure paths start, e.g. `/trpc/`. */
  basePath: string;
  /** The most bytes a request's body may hold. */
  maxBodySize: number;
  /**
   * A smaller body limit for some procedures called alone, checked before anything is decoded: a single
   * enqueue carries one payload, so its body is held to what one payload may take rather than to `maxBodySize`.
   */
  maxBodySizeOf?: (path: string) => number;
  /** The most calls one HTTP batch may hold. */
  maxBatchSize: number;
  /**
   * The context of a request's calls. `letGoOfInput`, for a request of one call, drops this handler's copies of
   * the call's decoded input, for a procedure that has taken what it needs of it (what it keeps is its own);
   * `undefined` for a batch, whose other calls may still read theirs.
   */
  createContext: (req: IncomingMessage, letGoOfInput: (() => void) | undefined) => TContext;
  /** Told of every error answered, with the procedure's path when there is one. */
  onError: (opts: { error: TRPCError; path: string | undefined }) => void;
}

/** The HTTP method each kind of procedure is called with. */
const METHOD_OF: Record<TRPCProcedureType, 'GET' | 'POST'> = {
  query: 'GET',
  subscription: 'GET',
  mutation: 'POST',
};

const NOT_JSON = 'The request body must be JSON, sent with content-type: application/json.';

/** The inputs of a request that has let go of them. */
const NO_INPUTS = async (): Promise<Record<number, unknown>> => ({});

/** What every call of one request shares. */
interface Request<TContext> {
  method: string | undefined;
  /** Whether the request is a batch (`?batch=1`), answered as an array. */
  batch: boolean;
  /** The inputs by call index, read once when a procedure first asks; none once let go of. */
  inputs: () => Promise<Record<number, unknown>>;
  ctx: TContext;
  /** Aborts when the client goes away. */
  signal: AbortSignal;
  res: ServerResponse;
}

/** One procedure call of a request, and the input it was given once read (for the error shape). */
interface Call {
  path: string;
  index: number;
  procedure: AnyTRPCProcedure | undefined;
  input?: unknown;
}

/**
 * Serves every tRPC request (`<basePath><path>`) straight from Node's request and response, in tRPC's wire
 * format: a query (`GET ?input=`), a mutation (`POST` with a JSON body), a batch of either (`?batch=1`, paths
 * joined by `,`, inputs keyed by index, answered as an array), and a subscription over server-sent events.
 * The calls go through tRPC's error shape and response transform, and through a procedure call that runs
 * each procedure's middlewares as tRPC's does (`runProcedure`); every error, of the request or of one call,
 * is answered through `answerError`, which tells `onError`.
 *
 * Why not tRPC's adapter: it builds a Fetch `Request` and `Response` for every call, which cost the server as
 * much time as a single enqueue's insert, and streams events through web streams, serializing each one again
 * for every subscriber; here a job event's bytes are made once and written to every stream
 * (docs/architecture.md gives the figures). What it accepts beyond this: form data and octet-stream bodies
 * (refused here, 415 with workq code `VALIDATION`), method override, and `httpBatchStreamLink`'s streamed
 * answers (a batch is answered whole).
 *
 * Bodies are read when a procedure asks for its input, after authentication, and at most once per request:
 * up to `maxBodySizeOf(path)` for a call alone, `maxBodySize` for a batch, with their nesting counted before
 * they are parsed.
 */
export function createTrpcHandler<TContext>(
  options: TrpcHandlerOptions<TContext>,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { router, basePath } = options;
  const config = router._def._config;
  const procedures = router._def.procedures as Record<string, AnyTRPCProcedure | undefined>;

  return async (req, res) => {
    let ctx: TContext | undefined;
    try {
      if (req.method === 'HEAD') return void res.writeHead(204).end();
      if (req.method !== 'GET' && req.method !== 'POST') {
        res.setHeader('allow', 'GET, POST');
        throw new TRPCError({ code: 'METHOD_NOT_SUPPORTED', message: `Unsupported ${req.method} request.` });
      }
      if (req.method === 'POST' && !isJsonContentType(req.headers['content-type'])) {
        throw new TRPCError({ code: 'UNSUPPORTED_MEDIA_TYPE', message: NOT_JSON });
      }
      const url = new URL(req.url ?? '/', 'http://localhost');
      const batch = url.searchParams.get('batch') === '1';
      const paths = procedurePaths(url.pathname.slice(basePath.length), batch);
      if (paths.length > options.maxBatchSize) {
        throw new TRPCError({ code: 'BAD_REQUEST', message: 'Batch call exceeds maximum size' });
      }
      const calls: Call[] = paths.map((path, index) => ({ path, index, procedure: procedures[path] }));
      const letGoOfInput = batch
        ? undefined
        : () => {
            request.inputs = NO_INPUTS;
            for (const call of calls) call.input = undefined;
          };
      ctx = options.createContext(req, letGoOfInput);
      const request: Request<TContext> = {
        method: req.method,
        batch,
        inputs: inputReader(req, url, batch ? options.maxBodySize : bodyLimitOf(paths[0] ?? ''), batch && paths.length),
        ctx,
        signal: abortOnDisconnect(req, res),
        res,
      };
      const [first] = calls;
      if (!batch && first?.procedure?._def.type === 'subscription' && req.method === 'GET') {
        const lastEventId =
          req.headers['last-event-id'] ?? url.searchParams.get('lastEventId') ?? url.searchParams.get('Last-Event-Id');
        return await streamEvents(res, {
          values: () => callProcedure(first, request, typeof lastEventId === 'string' ? lastEventId : undefined),
          serialize: (value) => config.transformer.output.serialize(value),
          errorShape: (cause) => answerError(cause, first, ctx).shape,
          signal: request.signal,
        });
      }
      const answers = await Promise.all(
        calls.map(async (call) => {
          try {
            return { json: { result: { data: await callProcedure(call, request) } }, error: undefined };
          } catch (cause) {
            const { error, shape } = answerError(cause, call, ctx);
            return { json: { error: shape }, error };
          }
        }),
      );
      const jsons = answers.map((answer) => answer.json);
      const status = getHTTPStatusCode(
        batch ? jsons : (jsons[0] ?? { result: { data: undefined } }),
        answers.map((answer) => answer.error),
      );
      send(res, status, JSON.stringify(transformTRPCResponse(config, batch ? jsons : jsons[0]!)));
    } catch (cause) {
      const { error, shape } = answerError(cause, undefined, ctx);
      send(res, getHTTPStatusCodeFromError(error), JSON.stringify(transformTRPCResponse(config, { error: shape })));
    }
  };

  /** The body limit of a call alone at `path`. */
  function bodyLimitOf(path: string): number {
    return options.maxBodySizeOf?.(path) ?? options.maxBodySize;
  }

  /**
   * Calls `call`'s procedure with the request's input for it (for a subscription, with the `Last-Event-Id` it
   * resumes from, when there is one). Refuses an unknown path, the wrong method, and a subscription in a batch.
   */
  async function callProcedure(call: Call, request: Request<TContext>, lastEventId?: string): Promise<unknown> {
    const { procedure, path, index } = call;
    if (!procedure) throw new TRPCError({ code: 'NOT_FOUND', message: `No procedure found on path "${path}"` });
    const type = procedure._def.type as TRPCProcedureType;
    if (request.method !== METHOD_OF[type]) {
      // A 405 names the method the procedure takes (RFC 9110, 15.5.6).
      request.res.setHeader('allow', METHOD_OF[type]);
      throw new TRPCError({
        code: 'METHOD_NOT_SUPPORTED',
        message: `Unsupported ${request.method}-request to ${type} procedure at path "${path}"`,
      });
    }
    if (type === 'subscription' && request.batch) {
      throw new TRPCError({ code: 'BAD_REQUEST', message: 'Cannot batch subscription calls' });
    }
    const getRawInput = async () => {
      let input = (await request.inputs())[index];
      if (lastEventId) input = isObject(input) ? { ...input, lastEventId } : (input ?? { lastEventId });
      call.input = input;
      return input;
    };
    const { ctx, signal } = request;
    return runProcedure(procedure, { path, getRawInput, ctx, type, signal, batchIndex: index });
  }

  /**
   * The request's inputs by call index, read once when first asked for: from `?input=` on a GET, from the
   * body (up to `maxBytes`) on a POST; a batch's (`batchSize` calls; `false` for a call alone) are an object
   * keyed by index, of which only the calls' own are decoded. A body too large is the
   * server's `PAYLOAD_TOO_LARGE`; one too deeply nested, `VALIDATION`; text that is not JSON, `BAD_REQUEST`.
   */
  function inputReader(
    req: IncomingMessage,
    url: URL,
    maxBytes: number,
    batchSize: number | false,
  ): () => Promise<Record<number, unknown>> {
    let read: Promise<Record<number, unknown>> | undefined;
    const readInputs = async (): Promise<Record<number, unknown>> => {
      const query = url.searchParams.get('input');
      const text = req.method === 'GET' ? Buffer.from(query ?? '') : await readBodyBytes(req, maxBytes);
      if (text.length === 0) return {};
      checkJsonDepth(text);
      const parsed: unknown = JSON.parse(text.toString());
      if (batchSize === false) return { 0: config.transformer.input.deserialize(parsed) };
      if (!isObject(parsed)) {
        throw new TRPCError({ code: 'BAD_REQUEST', message: '"input" needs to be an object when doing a batch call' });
      }
      const inputs: Record<number, unknown> = {};
      for (let index = 0; index < batchSize; index++) {
        const input = parsed[index];
        if (input !== undefined) inputs[index] = config.transformer.input.deserialize(input);
      }
      return inputs;
    };
    return () => {
      read ??= readInputs().catch((cause: unknown) => {
        // The server's own refusals (size, nesting) keep their codes; whatever else the decoding met is the request's fault.
        if (cause instanceof TRPCError || cause instanceof WorkqError) throw cause;
        throw new TRPCError({
          code: 'BAD_REQUEST',
          message: cause instanceof Error ? cause.message : 'Invalid input',
          cause,
        });
      });
      return read;
    };
  }

  /** The one error path: tells `onError` of `cause` and gives its shape, for `call` or for the whole request. */
  function answerError(cause: unknown, call: Call | undefined, ctx: TContext | undefined) {
    const error = getTRPCErrorFromUnknown(cause);
    options.onError({ error, path: call?.path });
    const type = call?.procedure?._def.type ?? 'unknown';
    const shape = getTRPCErrorShape({ config, error, type, path: call?.path, input: call?.input, ctx });
    return { error, shape };
  }
}

/** The procedure paths of a URL path, or `BAD_REQUEST` when it does not decode. */
function procedurePaths(encoded: string, batch: boolean): string[] {
  let path: string;
  try {
    path = decodeURIComponent(encoded);
  } catch (cause) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `Invalid URL-encoding in path "${encoded}"`, cause });
  }
  return batch ? path.split(',') : [path];
}

/** Writes a JSON answer, unless the client went away. */
function send(res: ServerResponse, status: number, json: string): void {
  if (res.destroyed) return;
  // Appended, so a `vary` set before (CORS's `origin`) is kept.
  res.appendHeader('vary', 'trpc-accept, accept');
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(json);
}

/** A signal that aborts when the client goes away before the response is written, as tRPC's adapters do. */
function abortOnDisconnect(req: IncomingMessage, res: ServerResponse): AbortSignal {
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
