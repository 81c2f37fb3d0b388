import { createTRPCClient, httpBatchLink, httpLink, splitLink } from '@trpc/client';
import type { AppRouter } from '@workq/queue-server/router';
import superjson from 'superjson';
import { toWorkqError } from './errors.ts';

export type QueueApi = ReturnType<typeof createTRPCClient<AppRouter>>;

/** Calls that may wait on the server (long polls) travel alone, so they never hold up a batch. */
const LONG_POLL_PATHS = new Set(['consumer.claim', 'jobs.wait']);

export interface TransportOptions {
  url: string;
  token?: string;
  fetch?: typeof fetch;
  /** Most calls batched into one HTTP request. @defaultValue 50 */
  maxBatchItems?: number;
}

/** The tRPC client to a queue server; `call` runs a request and converts any failure to a `WorkqError`. */
export function createTransport(options: TransportOptions): {
  api: QueueApi;
  call: <T>(run: (api: QueueApi) => Promise<T>) => Promise<T>;
} {
  const url = `${options.url.replace(/\/+$/, '')}/trpc`;
  const headers = () => (options.token ? { authorization: `Bearer ${options.token}` } : {});
  const common = { url, transformer: superjson, headers, ...(options.fetch ? { fetch: options.fetch } : {}) };
  const api = createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => LONG_POLL_PATHS.has(op.path),
        true: httpLink(common),
        false: httpBatchLink({ ...common, maxItems: options.maxBatchItems ?? 50 }),
      }),
    ],
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
