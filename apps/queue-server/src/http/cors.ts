import type { IncomingMessage, ServerResponse } from 'node:http';
import { WorkqError } from '@workq/core';
import { sendJson } from './rest.ts';

/** Methods a page may use: tRPC queries are GETs, everything else POSTs. */
const ALLOWED_METHODS = 'GET, POST';
/** Request headers a page may send: the bearer token, JSON bodies, and the header tRPC's streaming links add. */
const ALLOWED_HEADERS = 'authorization, content-type, trpc-accept';
/** How long a browser may reuse a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

export interface CorsPolicy {
  /**
   * Applies the policy to one request. A preflight (`OPTIONS` with `Origin`
   * and `Access-Control-Request-Method`) is answered here — 204 with the
   * allowed methods, headers and max-age for a listed origin, 403 without any
   * CORS header for another — and `true` returned. Any other request is
   * served as usual (`false`): from a listed origin, its response (errors
   * included, so the page can read them) carries
   * `access-control-allow-origin: <origin>`; with any origin listed, every
   * response carries `vary: origin`, so no cache hands one origin's answer to
   * another.
   */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** Whether `origin` (an `Origin` header's value) is one of the listed origins. */
  lists(origin: string): boolean;
}

/** The policy for the listed origins; `VALIDATION` naming an origin that is not one (including `*`). */
export function createCors(origins: readonly string[]): CorsPolicy {
  const allowed = new Set(origins.map(parseOrigin));
  return {
    handle(req, res) {
      const origin = req.headers.origin;
      const listed = origin !== undefined && allowed.has(origin);
      if (origin !== undefined && req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
        if (!listed) {
          sendJson(res, 403, {
            error: {
              code: 'FORBIDDEN',
              message: `Pages from ${JSON.stringify(origin)} may not call this server: list the origin with --cors-origin (WORKQ_CORS_ORIGINS, or cors.origins).`,
            },
          });
          return true;
        }
        res.writeHead(204, {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': ALLOWED_METHODS,
          'access-control-allow-headers': ALLOWED_HEADERS,
          'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
          vary: 'origin',
        });
        res.end();
        return true;
      }
      if (allowed.size > 0) res.appendHeader('vary', 'origin');
      if (listed) res.setHeader('access-control-allow-origin', origin);
      return false;
    },
    lists: (origin) => allowed.has(origin),
  };
}

/** An origin as browsers send it in `Origin`, e.g. `https://app.example.com` (a trailing `/` is dropped). */
function parseOrigin(text: string): string {
  if (text.trim() === '*') {
    throw new WorkqError(
      'VALIDATION',
      'CORS origin "*" is not accepted: list each origin whose pages may call the server, e.g. --cors-origin https://app.example.com.',
    );
  }
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  const bare = url && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
  if (!url || !bare || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new WorkqError(
      'VALIDATION',
      `CORS origin ${JSON.stringify(text)} is not an origin: write it as scheme://host[:port] with no path, e.g. https://app.example.com.`,
    );
  }
  return url.origin;
}
