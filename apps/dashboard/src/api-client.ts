import type { createTRPCClient } from '@trpc/client';
import type { AppRouter } from '@workq/queue-server/router';

/**
 * The typed client of the queue server, inferred from its router. Apart from `api.ts` (which makes one in
 * the browser), so modules that only take a client load nothing of the browser's.
 */
export type Api = ReturnType<typeof createTRPCClient<AppRouter>>;
