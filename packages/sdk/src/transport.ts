import { createTRPCClient, httpLink } from '@trpc/client';
import { wireTransformer } from '@workq/core';
import type { AppRouter } from '@workq/queue-server/router';
import { defaultFetch } from '#default-fetch';
import { toWorkqError } from './errors.ts';

export type QueueApi = ReturnType<typeof createTRPCClient<AppRouter>>;

export interface TransportOptions {
  url: string;
  token?: string;
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
  const headers = () => (options.token ? { authorization: `Bearer ${options.token}` } : {});
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
