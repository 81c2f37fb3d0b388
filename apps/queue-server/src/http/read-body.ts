import type { IncomingMessage } from 'node:http';
import { WorkqError } from '@workq/core';

/**
 * A request's body as UTF-8 text, refused with `PAYLOAD_TOO_LARGE` once it
 * passes `maxBytes`. The rest of an oversized body is read and dropped, so the
 * refusal still reaches the client on the same connection.
 */
export function readBodyText(req: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners('data');
        req.resume();
        reject(new WorkqError('PAYLOAD_TOO_LARGE', `Request body exceeds ${maxBytes} bytes.`));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}
