import type { IncomingMessage } from 'node:http';
import { WorkqError } from '@workq/core';
import { currentRequest } from '../request-context.ts';
import { dropBodyBytes, holdBodyBytes, ownBodyBytes } from './body-budget.ts';

/**
 * Most levels of `[` and `{` a request's JSON may nest: far more than any
 * value a job may hold (64), a batch's envelope and superjson's `meta` need.
 * `JSON.parse` slows down faster than the nesting grows (a 2 MB body of
 * `[[[…]]]` held the event loop 1.2 s), so the depth is counted first.
 */
export const MAX_JSON_DEPTH = 256;

/**
 * A request's body, refused with `PAYLOAD_TOO_LARGE` once it passes
 * `maxBytes`, or with a retryable `UNAVAILABLE` once the bodies its server
 * holds at once would pass their budget (body-budget.ts). The rest of a
 * refused body is read and dropped, so the refusal still reaches the client
 * on the same connection.
 */
export function readBodyBytes(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  ownBodyBytes(req, currentRequest()?.callerKey);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const refuse = (error: unknown) => {
      req.removeAllListeners('data');
      req.resume();
      dropBodyBytes(req);
      reject(error);
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        return refuse(new WorkqError('PAYLOAD_TOO_LARGE', `Request body exceeds ${maxBytes} bytes.`));
      }
      try {
        holdBodyBytes(req, chunk.length);
      } catch (error) {
        return refuse(error);
      }
      chunks.push(chunk);
    });
    // The chunks go once joined: the listener that holds them lives as long as the request.
    req.once('end', () => resolve(Buffer.concat(chunks.splice(0))));
    req.once('error', reject);
  });
}

/** A request's body as UTF-8 text; see `readBodyBytes`. */
export async function readBodyText(req: IncomingMessage, maxBytes: number): Promise<string> {
  return (await readBodyBytes(req, maxBytes)).toString('utf8');
}

/**
 * `VALIDATION` when the JSON text in `body` nests deeper than
 * `MAX_JSON_DEPTH`; counted in one pass over the bytes (brackets inside
 * strings do not count), before any of it is decoded.
 */
export function checkJsonDepth(body: Buffer): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i];
    if (inString) {
      if (byte === 0x5c) i++;
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) {
        throw new WorkqError(
          'VALIDATION',
          `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels; a payload may not be nested more than 64 levels deep.`,
        );
      }
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--;
    }
  }
}
