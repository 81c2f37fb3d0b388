import { createTRPCClient, httpLink } from '@trpc/client';
import { WorkqError, wireTransformer } from '@workq/core';
import type { AppRouter } from '@workq/queue-server/router';
import { defaultFetch } from '#default-fetch';
import { toWorkqError } from './errors.ts';

export type QueueApi = ReturnType<typeof createTRPCClient<AppRouter>>;

/**
 * A bearer token, or a function that returns one. The function is called for
 * every request, so a page can hand over a fresh short-lived token whenever
 * it has one; an empty string sends no token.
 */
export type TokenSource = string | (() => string | Promise<string>);

export interface TransportOptions {
  url: string;
  token?: TokenSource;
  fetch?: typeof fetch;
}

/**
 * The tRPC client to a queue server; `call` runs a request and converts any
 * failure to a `WorkqError`. Each call is its own HTTP request, sent at once:
 * the SDK batches where batching pays (enqueues made together, acks, lease
 * extensions), so no call waits on a batching timer.
 */
export function createTransport(options: TransportOptions): {
  api: QueueApi;
  call: <T>(run: (api: QueueApi) => Promise<T>) => Promise<T>;
} {
  const url = `${options.url.replace(/\/+$/, '')}/trpc`;
  const headers = authorizationHeaders(options.token);
  const api = createTRPCClient<AppRouter>({
    links: [httpLink({ url, transformer: wireTransformer, headers, fetch: options.fetch ?? defaultFetch })],
  });
  return {
    api,
    call: async (run) => {
      try {
        return await run(api);
      } catch (error) {
        throw toWorkqError(error);
      }
    },
  };
}

type AuthHeaders = { authorization?: string };

const bearer = (token: string): AuthHeaders => (token ? { authorization: `Bearer ${token}` } : {});

/**
 * The `Authorization` header for each request: one fixed object for a string
 * token (no call, no promise per request), or the token function's answer,
 * asked for per request. A function that throws or rejects fails the request
 * with `UNAUTHORIZED` (retryable), before anything is sent.
 */
function authorizationHeaders(
  token: TokenSource | undefined,
): AuthHeaders | (() => AuthHeaders | Promise<AuthHeaders>) {
  if (typeof token !== 'function') return bearer(token ?? '');
  const failed = (cause: unknown): never => {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new WorkqError('UNAUTHORIZED', `The client's token function failed, so the request was not sent: ${reason}`, {
      retryable: true,
      cause,
    });
  };
  return () => {
    try {
      const value = token();
      return typeof value === 'string' ? bearer(value) : value.then(bearer, failed);
    } catch (cause) {
      return failed(cause);
    }
  };
}
