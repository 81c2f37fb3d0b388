import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  callTRPCProcedure,
  getTRPCErrorFromUnknown,
  getTRPCErrorShape,
  isTrackedEnvelope,
  TRPCError,
} from '@trpc/server';
import { abortOnDisconnect, procedurePath, type TrpcMutationOptions } from './trpc-mutations.ts';

export type TrpcSubscriptionOptions<TContext> = Omit<TrpcMutationOptions<TContext>, 'maxBodySize'>;

type WireParts = () => (string | Uint8Array)[];
const WIRE_PARTS = Symbol('wire parts');

/**
 * `value`, carrying what the router's transformer and `JSON.stringify` would
 * make of it, as UTF-8 in pieces, so the stream writes those instead of
 * serializing and encoding the value again (job events: each run's bytes are
 * made once and shared by every stream). The value stays what it is for any
 * other reader.
 */
export function withWireParts<T extends object>(value: T, parts: WireParts): T {
  Object.defineProperty(value, WIRE_PARTS, { value: parts });
  return value;
}

/**
 * Writes one server-sent event whose data comes in pieces (`withWireParts`),
 * each as it is: shared bytes are handed to the socket, never copied or
 * joined per stream. Resolves `false` when the response wants a `drain`.
 */
function writeMessageOfParts(res: ServerResponse, parts: (string | Uint8Array)[], id: string | undefined): boolean {
  res.cork();
  res.write('data: ');
  for (const part of parts) res.write(part);
  const more = res.write(id === undefined ? '\n\n\n' : `\nid: ${id}\n\n\n`);
  res.uncork();
  return more;
}

/** The headers of an event stream, as tRPC's adapter sends them. */
const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

/**
 * Serves a tRPC subscription over server-sent events
 * (`GET /trpc/<path>?input=…`) straight onto Node's response, through tRPC's
 * own procedure call and error shape: the events tRPC's adapter sends
 * (`connected`, each value with its tracked `id`, `return`, and
 * `serialized-error` for a failure, before or during the stream), in the
 * same text. tRPC's adapter pipes them through web streams and Node's
 * `TextEncoderStream`, which on Node 20 handles each character in
 * JavaScript; a busy queue's job events are large and constant, and the
 * socket encodes text natively. Like tRPC's adapter, the stream stops
 * pulling values while the client does not read (the producer decides what
 * to do with the backlog), and the procedure's signal aborts when the client
 * goes away. The handler returns `false` for any other request.
 */
export function createTrpcSubscriptionHandler<TContext>(
  options: TrpcSubscriptionOptions<TContext>,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { router, basePath } = options;
  const config = router._def._config;
  const procedures = router._def.procedures as Record<string, { _def: { type: string } } | undefined>;

  return (req, res) => {
    if (req.method !== 'GET' || !req.url?.startsWith(basePath)) return false;
    const url = new URL(req.url, 'http://localhost');
    const path = procedurePath(url.pathname.slice(basePath.length));
    if (path === undefined || procedures[path]?._def.type !== 'subscription' || url.searchParams.has('batch')) {
      return false;
    }
    void stream(path, url.searchParams, req, res);
    return true;
  };

  async function stream(path: string, query: URLSearchParams, req: IncomingMessage, res: ServerResponse) {
    const signal = abortOnDisconnect(req, res);
    res.appendHeader('vary', 'trpc-accept, accept');
    res.writeHead(200, SSE_HEADERS);
    res.write(message({ event: 'connected', data: '{}' }));
    let ctx: TContext | undefined;
    let input: unknown;
    try {
      ctx = options.createContext(req);
      const lastEventId = req.headers['last-event-id'] ?? query.get('lastEventId') ?? query.get('Last-Event-Id');
      const getRawInput = async () => {
        input = parseInput(query.get('input'));
        if (typeof lastEventId === 'string' && lastEventId !== '') {
          input = isObject(input) ? { ...input, lastEventId } : (input ?? { lastEventId });
        }
        return input;
      };
      const call = { router, path, getRawInput, ctx, type: 'subscription' as const, signal, batchIndex: 0 };
      const values = await callTRPCProcedure(call);
      if (!isAsyncIterable(values)) {
        throw new TRPCError({
          code: 'INTERNAL_SERVER_ERROR',
          message: `Subscription ${path} is not an async iterable`,
        });
      }
      for await (const value of values) {
        const [id, data] = isTrackedEnvelope(value) ? value : [undefined, value];
        const parts = isObject(data) ? (data as { [WIRE_PARTS]?: WireParts })[WIRE_PARTS] : undefined;
        const eventId = id === undefined ? undefined : String(id);
        const more = parts
          ? writeMessageOfParts(res, parts(), eventId)
          : res.write(
              message({
                data: JSON.stringify(config.transformer.output.serialize(data)),
                ...(eventId === undefined ? {} : { id: eventId }),
              }),
            );
        if (!more) {
          await writable(res);
        }
        if (res.destroyed) return;
      }
      res.end(message({ event: 'return', data: '' }));
    } catch (cause) {
      if (signal.aborted || res.destroyed) return res.end();
      const error = getTRPCErrorFromUnknown(cause);
      options.onError({ error, path });
      const shape = getTRPCErrorShape({ config, error, type: 'subscription', path, input, ctx });
      res.end(message({ event: 'serialized-error', data: JSON.stringify(config.transformer.output.serialize(shape)) }));
    }
  }

  function parseInput(text: string | null): unknown {
    if (text === null) return undefined;
    try {
      return config.transformer.input.deserialize(JSON.parse(text));
    } catch (cause) {
      throw new TRPCError({ code: 'PARSE_ERROR', message: 'The subscription input is not valid JSON.', cause });
    }
  }
}

/** One server-sent event in tRPC's layout: its fields, then a blank line (tRPC ends each with two). */
function message(fields: { event?: string; data: string; id?: string }): string {
  let text = fields.event === undefined ? '' : `event: ${fields.event}\n`;
  text += `data: ${fields.data}\n`;
  if (fields.id !== undefined) text += `id: ${fields.id}\n`;
  return `${text}\n\n`;
}

/** Resolves once `res` can take more, or has closed. */
function writable(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return isObject(value) && Symbol.asyncIterator in value;
}
