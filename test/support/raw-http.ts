import { request } from 'node:http';
import { connect } from 'node:net';

/** An answer to `rawHttp`: status, headers and the body as text (and parsed, when it is JSON). */
export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
}

/**
 * One HTTP request with exactly the headers given — `host` and `origin`
 * included, which `fetch` will not let a caller choose — as a browser under
 * DNS rebinding, or a hand-written client, would send them.
 */
export function rawHttp(
  baseUrl: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<RawAnswer> {
  const url = new URL(options.path, baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers ?? {}, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('error', reject);
        res.once('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.once('error', reject);
    req.end(options.body);
  });
}

/** A raw connection to `url`, with what it received and when it closed (ms after it opened). */
export function openSocket(url: string) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const openedAt = performance.now();
  const state = { received: '', closedAfterMs: undefined as number | undefined };
  socket.on('data', (chunk: Buffer) => {
    state.received += chunk.toString('utf8');
  });
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) =>
    socket.once('close', () => {
      state.closedAfterMs = performance.now() - openedAt;
      resolve(state.closedAfterMs);
    }),
  );
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, state, closed, connected };
}
