import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import type { JobStatus, WorkqError } from '@workq/core';
import type { AppRouter } from '@workq/queue-server';
import superjson from 'superjson';

/** A tRPC client to a queue server that skips the SDK (no client-side validation, no schema registration). */
export function rawClient(url: string, token?: string) {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${url.replace(/\/+$/, '')}/trpc`,
        transformer: superjson,
        headers: () => (token ? { authorization: `Bearer ${token}` } : {}),
      }),
    ],
  });
}

export type RawClient = ReturnType<typeof rawClient>;

/** The `WorkqError` an SDK call failed with; throws when it succeeds. */
export async function failure(call: Promise<unknown>): Promise<WorkqError> {
  return call.then(
    () => {
      throw new Error('expected the call to fail, but it succeeded');
    },
    (e: unknown) => e as WorkqError,
  );
}

/** The workq error code and message a raw tRPC call failed with. */
export async function rawFailure(
  call: Promise<unknown>,
): Promise<{ code: unknown; message: string; details: unknown }> {
  const error = await call.then(
    () => {
      throw new Error('expected the call to fail, but it succeeded');
    },
    (e: unknown) => e,
  );
  if (!(error instanceof TRPCClientError)) throw error;
  const data = (error.data ?? {}) as { workqCode?: unknown; details?: unknown };
  return { code: data.workqCode, message: error.message, details: data.details };
}

/** Every job of one type, through the admin API (follows cursors). */
export async function listAllJobs(admin: RawClient, name: string): Promise<JobStatus[]> {
  const all: JobStatus[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await admin.admin.list.query({ name, limit: 1000, ...(cursor ? { cursor } : {}) });
    all.push(...(page.jobs as JobStatus[]));
    if (!page.nextCursor) return all;
    cursor = page.nextCursor;
  }
}
