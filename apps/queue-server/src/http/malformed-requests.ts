import { type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WorkqErrorCode } from '@workq/core';
import { STATUS_OF_ERROR } from '../errors.ts';

/** What Node's HTTP parser reports for a request it cannot read, by its error code. */
const REFUSAL_OF_PARSER_ERROR: Record<string, { code: WorkqErrorCode; status: number; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    code: 'PAYLOAD_TOO_LARGE',
    status: 431,
    message: "The request's headers are larger than the server accepts (Node's --max-http-header-size).",
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    code: 'PAYLOAD_TOO_LARGE',
    status: 413,
    message: "The request's chunk extensions are larger than the server accepts.",
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    code: 'TIMEOUT',
    status: STATUS_OF_ERROR.TIMEOUT.http,
    message: 'The request did not arrive in full within the time the server allows (limits.requestTimeoutMs).',
  },
};

/**
 * Answers a request Node's HTTP parser refuses (a control character in a header, a header too large, a
 * request that never finishes arriving) as every other refusal is answered: a JSON `{ error: { code,
 * message } }` with a workq code, where Node alone sends a bare status line. The parser's own code names
 * what was wrong (`HPE_INVALID_HEADER_TOKEN`); nothing else of the request is repeated. As Node does, it
 * writes only on a connection that has sent nothing yet, and then closes it.
 */
export function answerMalformedRequests(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex & { bytesWritten?: number }) => {
    if (socket.writable && socket.bytesWritten === 0) {
      const refusal = REFUSAL_OF_PARSER_ERROR[error.code ?? ''] ?? {
        code: 'VALIDATION',
        status: STATUS_OF_ERROR.VALIDATION.http,
        message: `The request is not valid HTTP/1.1 (${parserCode(error)}).`,
      };
      const body = JSON.stringify({ error: { code: refusal.code, message: refusal.message } });
      socket.write(
        `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n` +
          'content-type: application/json\r\n' +
          `content-length: ${Buffer.byteLength(body)}\r\n` +
          `connection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  });
}

/** The parser's code when it is one (letters, digits and underscores), else a generic word: never free text. */
function parserCode(error: NodeJS.ErrnoException): string {
  return typeof error.code === 'string' && /^[A-Z0-9_]{1,64}$/.test(error.code) ? error.code : 'malformed request';
}
