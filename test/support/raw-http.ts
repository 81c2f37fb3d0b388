import { request } from 'node:http';

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
