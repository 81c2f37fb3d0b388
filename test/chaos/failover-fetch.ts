/**
 * A `fetch` for the SDK that spreads one client over several queue servers,
 * as a load balancer in front of them would: requests go to the current
 * server; a request its server refused to connect (so it was never sent) goes
 * to the next one. Anything else (a connection reset mid-request, a timeout)
 * is left to the caller, since the server may have acted on it.
 */
import { defaultFetch } from '@workq/sdk';

export interface FailoverFetchOptions {
  /** Base URLs of the servers, e.g. `http://127.0.0.1:4001`; the first is this client's home. */
  urls: readonly string[];
  /** How long a request may take before it is aborted (`TIMEOUT` to the SDK), by tRPC path. */
  timeoutMs: (path: string) => number;
  /** After this long away from home, the next request tries home first again. @defaultValue 10_000 */
  homeAgainAfterMs?: number;
  /** Called with each request's path, body and answer text, for the run log. */
  observe?: (path: string, requestBody: string, responseText: string, ok: boolean) => void;
}

export interface FailoverFetch {
  fetch: typeof fetch;
  /** Requests sent again to another server after their own refused the connection. */
  readonly failovers: number;
}

interface TextResponse {
  ok: boolean;
  text(): Promise<string>;
}

const base = (defaultFetch ?? globalThis.fetch) as unknown as (
  input: string,
  init: RequestInit,
) => Promise<TextResponse & object>;

function refused(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ECONNREFUSED';
}

export function failoverFetch(options: FailoverFetchOptions): FailoverFetch {
  const { urls, timeoutMs, observe } = options;
  const homeAgainAfterMs = options.homeAgainAfterMs ?? 10_000;
  const home = urls[0];
  if (home === undefined) throw new Error('failoverFetch needs at least one server URL');
  let current = 0;
  let leftHomeAt = 0;
  let failovers = 0;

  const send = async (input: string | URL | Request, init: RequestInit = {}): Promise<TextResponse> => {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!href.startsWith(home)) throw new Error(`request to ${href} is not under ${home}`);
    const rest = href.slice(home.length);
    const path = rest.replace(/^\/trpc\//, '').split('?')[0] ?? rest;
    const signal = AbortSignal.any([...(init.signal ? [init.signal] : []), AbortSignal.timeout(timeoutMs(path))]);
    if (current !== 0 && Date.now() - leftHomeAt > homeAgainAfterMs) current = 0;
    let lastError: unknown;
    for (let tried = 0; tried < urls.length; tried++) {
      const index = current;
      try {
        const response = await base(`${urls[index]}${rest}`, { ...init, signal });
        if (observe) {
          const text = await response.text();
          observe(path, typeof init.body === 'string' ? init.body : '', text, response.ok);
        }
        return response;
      } catch (error) {
        if (!refused(error)) throw error;
        lastError = error;
        failovers++;
        // Another request may have moved on already; move only from the server that refused.
        if (current === index) {
          current = (index + 1) % urls.length;
          if (index === 0) leftHomeAt = Date.now();
        }
      }
    }
    throw lastError;
  };
  return {
    fetch: send as unknown as typeof fetch,
    get failovers() {
      return failovers;
    },
  };
}
