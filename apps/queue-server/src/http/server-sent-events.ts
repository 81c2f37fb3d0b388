import type { ServerResponse } from 'node:http';
import { isTrackedEnvelope, TRPCError } from '@trpc/server';

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

export interface EventStream {
  /** The subscription's values: its procedure's call, which may fail before the first. */
  values: () => Promise<unknown>;
  /** What the router's transformer makes of a value or an error shape. */
  serialize: (value: unknown) => unknown;
  /** The error shape of a failure, before or during the stream; told to the server's error handler. */
  errorShape: (cause: unknown) => unknown;
  /** Aborts when the client goes away. */
  signal: AbortSignal;
}

/** The headers of an event stream, as tRPC's adapter sends them. */
const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

/**
 * Writes a tRPC subscription to `res` as server-sent events, in the text
 * tRPC's adapter sends: `connected`, each value with its tracked `id`,
 * `return`, and `serialized-error` for a failure, before or during the
 * stream. Written straight to the socket, which encodes text natively
 * (tRPC's adapter pipes them through web streams and Node's
 * `TextEncoderStream`, which on Node 20 handles each character in
 * JavaScript; a busy queue's job events are large and constant). Like
 * tRPC's adapter, the stream stops pulling values while the client does
 * not read (the producer decides what to do with the backlog).
 */
export async function streamEvents(res: ServerResponse, stream: EventStream): Promise<void> {
  res.appendHeader('vary', 'trpc-accept, accept');
  res.writeHead(200, SSE_HEADERS);
  res.write(message({ event: 'connected', data: '{}' }));
  try {
    const values = await stream.values();
    if (!isAsyncIterable(values)) {
      throw new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'The subscription is not an async iterable' });
    }
    for await (const value of values) {
      const [id, data] = isTrackedEnvelope(value) ? value : [undefined, value];
      const parts = isObject(data) ? (data as { [WIRE_PARTS]?: WireParts })[WIRE_PARTS] : undefined;
      const eventId = id === undefined ? undefined : String(id);
      const more = parts
        ? writeMessageOfParts(res, parts(), eventId)
        : res.write(
            message({
              data: JSON.stringify(stream.serialize(data)),
              ...(eventId === undefined ? {} : { id: eventId }),
            }),
          );
      if (!more) await writable(res);
      if (res.destroyed) return;
    }
    res.end(message({ event: 'return', data: '' }));
  } catch (cause) {
    if (stream.signal.aborted || res.destroyed) return void res.end();
    const shape = stream.errorShape(cause);
    res.end(message({ event: 'serialized-error', data: JSON.stringify(stream.serialize(shape)) }));
  }
}

/**
 * Writes one server-sent event whose data comes in pieces (`withWireParts`),
 * each as it is: shared bytes are handed to the socket, never copied or
 * joined per stream. Returns `false` when the response wants a `drain`.
 */
function writeMessageOfParts(res: ServerResponse, parts: (string | Uint8Array)[], id: string | undefined): boolean {
  res.cork();
  res.write('data: ');
  for (const part of parts) res.write(part);
  const more = res.write(id === undefined ? '\n\n\n' : `\nid: ${id}\n\n\n`);
  res.uncork();
  return more;
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
