import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { WorkqError } from '@workq/core';
import { isLoopbackHost } from '../auth.ts';
import { sendJson } from './rest.ts';

/** Paths every caller may reach: they tell only whether the server is up and ready, and change nothing. */
const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

/** Why the guard refused a request: its audit reason and the answer's status. */
export interface OpenModeRefusal {
  reason: 'host-not-allowed' | 'origin-not-allowed';
  status: number;
  message: string;
}

/**
 * What keeps a server without tokens (open mode, bound to loopback) loopback
 * in fact. Binding 127.0.0.1 keeps other machines out, but not the browser of
 * the person running it: a page can rebind its own name to 127.0.0.1 (DNS
 * rebinding) and then call the server as a same-origin page, or call
 * `http://127.0.0.1:4000` from its own origin without reading the answer —
 * enough to enqueue, or to `admin.pause`. So, on every path but the probes
 * (`/healthz`, `/readyz`), a request is refused when
 *
 * - its `Host` names neither a loopback address (`localhost`, `127.x.x.x`,
 *   `[::1]`, any port) nor an allowed host name: 421, as the request was
 *   meant for another server (a rebinding page's requests carry its own name);
 * - it carries an `Origin` that is neither the server's own (`http://` and
 *   the `Host` it was sent to) nor a listed CORS origin: 403, as a page of
 *   another origin made it.
 *
 * Answers use the server's JSON error shape, `FORBIDDEN`. A request without
 * `Origin` (curl, the SDK and the CLI in Node, a page's same-origin GET)
 * passes the second check: browsers send `Origin` on every cross-origin
 * request and on every POST.
 */
export function createOpenModeGuard(options: {
  allowedHosts: readonly string[];
  /** Whether an origin is one the CORS policy lists. */
  corsLists: (origin: string) => boolean;
}): (req: IncomingMessage) => OpenModeRefusal | undefined {
  const allowed = new Set(options.allowedHosts.map(parseAllowedHost));
  return (req) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (PROBE_PATHS.has(path)) return undefined;
    const host = req.headers.host;
    if (host !== undefined) {
      const name = hostnameOf(host);
      if (name === undefined || !(isLoopbackHost(name) || allowed.has(name))) {
        return {
          reason: 'host-not-allowed',
          status: 421,
          message: `This server runs without tokens, so it answers only requests addressed to localhost, 127.0.0.1 or [::1]; this one was addressed to ${JSON.stringify(host)}. To reach it by that name, list it with --allowed-host (WORKQ_ALLOWED_HOSTS, or allowedHosts), or configure tokens.`,
        };
      }
    }
    const origin = req.headers.origin;
    if (origin !== undefined && origin.toLowerCase() !== `http://${host}`.toLowerCase() && !options.corsLists(origin)) {
      return {
        reason: 'origin-not-allowed',
        status: 403,
        message: `Pages from ${JSON.stringify(origin)} may not call this server: it runs without tokens, so only its own pages may. List the origin with --cors-origin (WORKQ_CORS_ORIGINS, or cors.origins), or configure tokens.`,
      };
    }
    return undefined;
  };
}

/** Sends a refusal in the server's JSON error shape. */
export function sendRefusal(res: ServerResponse, refusal: OpenModeRefusal): void {
  sendJson(res, refusal.status, { error: { code: 'FORBIDDEN', message: refusal.message } });
}

/** The host name of a `Host` header (`name`, `name:port`, `[v6]`, `[v6]:port`), lower-cased; `undefined` when malformed. */
function hostnameOf(host: string): string | undefined {
  const match = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+))(?::\d{1,5})?$/i.exec(host.trim());
  if (!match) return undefined;
  return (match[1] ?? match[2] ?? '').toLowerCase().replace(/\.$/, '');
}

/** An allowed host name as given (`workq.test`), lower-cased; `VALIDATION` for anything with a scheme, port or path. */
function parseAllowedHost(text: string): string {
  const name = text.trim().toLowerCase();
  const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
  if (bare === '' || !/^[a-z0-9.:_-]+$/.test(bare) || (bare.includes(':') && isIP(bare) !== 6)) {
    throw new WorkqError(
      'VALIDATION',
      `Allowed host ${JSON.stringify(text)} is not a host name: write it without scheme, port or path, e.g. workq.test.`,
    );
  }
  return bare.replace(/\.$/, '');
}
