import { createTRPCClient, httpLink, httpSubscriptionLink, splitLink } from '@trpc/client';
import { WorkqError, wireTransformer } from '@workq/core';
import type { AppRouter } from '@workq/queue-server/router';
import { EventSource } from 'eventsource';
import { defaultFetch } from '#default-fetch';
import { timedOut, toWorkqError } from './errors.ts';
import { type AuthHeaders, type HeaderSource, withPlainMutations } from './plain-mutations.ts';

/** The queue server's typed tRPC client, inferred from its router: every procedure, as the server declares it. */
export type QueueApi = ReturnType<typeof createTRPCClient<AppRouter>>;

/**
 * A bearer token, or a function that returns one. The function is called for
 * every request, so a page can hand over a fresh short-lived token whenever
 * it has one; an empty string sends no token.
 */
export type TokenSource = string | (() => string | Promise<string>);

/** Where a `QueueApi` sends its requests, and with what token. */
export interface QueueApiOptions {
  /** The queue server's base URL, e.g. `http://127.0.0.1:4000`: its API is served at `<url>/trpc`. */
  url: string;
  /** The bearer token. @defaultValue none */
  token?: TokenSource | undefined;
  /** A fetch implementation. @defaultValue on Node, a keep-alive `node:http` client; elsewhere `globalThis.fetch` */
  fetch?: typeof fetch | undefined;
}

export interface TransportOptions extends QueueApiOptions {
  /** How long a request may go unanswered before it fails with `TIMEOUT`. */
  timeoutMs: number;
}

/** How one request is timed. */
export interface CallOptions {
  /** How long the server may hold the request on purpose (a long poll's wait): added to the time limit. */
  waitMs?: number | undefined;
  /** A shorter time limit for this request; the client's `timeoutMs` when larger or absent. */
  timeoutMs?: number | undefined;
  /** Ends the request early, on purpose: it then fails as the link reports it, not with `TIMEOUT`. */
  signal?: AbortSignal | undefined;
}

/**
 * Runs one request: `run` must hand `signal` to the tRPC call, which ends the
 * request when its time is up. Any failure becomes a `WorkqError`; one that
 * ran out of time is `TIMEOUT` (retryable).
 */
export type Call = <T>(run: (api: QueueApi, signal: AbortSignal) => Promise<T>, options?: CallOptions) => Promise<T>;

/**
 * The typed tRPC client of the queue server at `options.url`. The token
 * travels in the `Authorization` header of every request, never in a URL:
 * subscriptions too, whose server-sent events are read through a fetch-based
 * `EventSource`. Mutations skip tRPC's client for a plain request of the same
 * wire format (`withPlainMutations`). `createClient` is built on it; a caller that needs
 * procedures beyond the client's (the server's dashboard) uses it directly.
 */
export function createQueueApi(options: QueueApiOptions): QueueApi {
  const url = `${options.url.replace(/\/+$/, '')}/trpc`;
  const headers = authorizationHeaders(options.token);
  const fetchImpl = options.fetch ?? defaultFetch;
  const client = createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: httpSubscriptionLink({
          url,
          transformer: wireTransformer,
          EventSource,
          eventSourceOptions: () => ({ fetch: streamingFetch(options.fetch, headers) }),
        }),
        false: httpLink({ url, transformer: wireTransformer, headers, fetch: fetchImpl }),
      }),
    ],
  });
  return withPlainMutations(client, { url, headers, fetch: fetchImpl ?? globalThis.fetch });
}

/**
 * The tRPC client to a queue server; `call` runs a request and converts any
 * failure to a `WorkqError`. Each call is its own HTTP request, sent at once:
 * the SDK batches where batching pays (enqueues made together, acks, lease
 * extensions), so no call waits on a batching timer.
 */
export function createTransport(options: TransportOptions): { api: QueueApi; call: Call } {
  const api = createQueueApi(options);
  const defaultTimeoutMs = options.timeoutMs;
  return {
    api,
    call: async (run, callOptions) => {
      const ownMs = callOptions?.timeoutMs;
      const limitMs =
        (ownMs === undefined || ownMs > defaultTimeoutMs ? defaultTimeoutMs : ownMs) + (callOptions?.waitMs ?? 0);
      // One controller and one timer per request, cleared when it settles: cheaper than `AbortSignal.timeout`,
      // whose timer lives on until the signal is collected.
      const request = new AbortController();
      const timer = setTimeout(abortRequest, limitMs, request);
      const early = callOptions?.signal;
      const onEarly = early ? () => request.abort(early.reason) : undefined;
      if (early && onEarly) {
        if (early.aborted) onEarly();
        else early.addEventListener('abort', onEarly, { once: true });
      }
      try {
        return await run(api, request.signal);
      } catch (error) {
        throw request.signal.reason === TIMED_OUT ? timedOut(limitMs, error) : toWorkqError(error);
      } finally {
        clearTimeout(timer);
        if (early && onEarly) early.removeEventListener('abort', onEarly);
      }
    },
  };
}

/** The reason a request's controller is aborted with when its time is up. */
const TIMED_OUT = new WorkqError('TIMEOUT', 'The queue server did not answer in time.', { retryable: true });

function abortRequest(request: AbortController): void {
  request.abort(TIMED_OUT);
}

/**
 * The fetch a subscription's event stream runs on, with the token's header on
 * every (re)connection: the given fetch, or the platform's, whose response
 * body streams (the SDK's own Node client reads whole bodies). The
 * `EventSource` used is the `eventsource` package's, which takes a fetch, so
 * a browser sends the token as a header too.
 */
function streamingFetch(given: typeof fetch | undefined, headers: HeaderSource): typeof fetch {
  return async (input, init) => {
    const auth = typeof headers === 'function' ? await headers() : headers;
    const fetchImpl = given ?? globalThis.fetch;
    return fetchImpl(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...auth } });
  };
}

const bearer = (token: string): AuthHeaders => (token ? { authorization: `Bearer ${token}` } : {});

/**
 * The `Authorization` header for each request: one fixed object for a string
 * token (no call, no promise per request), or the token function's answer,
 * asked for per request. A function that throws or rejects fails the request
 * with `UNAUTHORIZED` (retryable), before anything is sent.
 */
function authorizationHeaders(token: TokenSource | undefined): HeaderSource {
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
