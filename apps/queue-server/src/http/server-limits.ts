import type { Server, ServerOptions } from 'node:http';
import { WorkqError } from '@workq/core';
import type { ResolvedServerOptions } from '../options.ts';

type ConnectionLimits = Pick<
  ResolvedServerOptions['limits'],
  'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections'
>;

/**
 * Node's HTTP server options for the limits: how long a client may take to
 * send its headers and its whole request (receiving only: the answer to a
 * long poll or an event stream takes as long as it needs), and how long an
 * idle connection stays. Node checks the first two on a timer; it runs at
 * least once a second here (Node's default is every 30 s), so a slow client
 * is cut within a second of its limit. `VALIDATION` for a limit below 1, or
 * headers allowed longer than the whole request.
 */
export function httpServerOptions(limits: ConnectionLimits): ServerOptions {
  for (const name of ['headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxConnections'] as const) {
    if (!Number.isInteger(limits[name]) || limits[name] < 1) {
      throw new WorkqError('VALIDATION', `limits.${name} must be a positive integer; got ${limits[name]}.`);
    }
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new WorkqError(
      'VALIDATION',
      `limits.headersTimeoutMs (${limits.headersTimeoutMs}) must not exceed limits.requestTimeoutMs (${limits.requestTimeoutMs}): the headers are part of the request.`,
    );
  }
  const checkEveryMs = Math.max(100, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 2)));
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: checkEveryMs,
  };
}

/** Caps the connections `server` holds at once: Node closes each one past the cap as it arrives. */
export function capConnections(server: Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.maxConnections;
}
