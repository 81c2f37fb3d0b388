import { createTRPCClient, httpLink, httpSubscriptionLink, splitLink, TRPCClientError } from '@trpc/client';
import { wireTransformer } from '@workq/core';
import type { AppRouter } from '@workq/queue-server/router';
import { EventSource } from 'eventsource';

/** The typed client of the queue server that serves this page. */
export type Api = ReturnType<typeof createTRPCClient<AppRouter>>;

const TOKEN_KEY = 'workq.dashboard.token';

/** The token lives in this tab's session storage only: never in a URL, never in local storage. */
export const session = {
  /** The token this tab signed in with (`''` for a server without tokens), or `null` before signing in. */
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  signIn: (token: string): void => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: (): void => sessionStorage.removeItem(TOKEN_KEY),
};

function authorization(token: string): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

/**
 * A client with `token` as its bearer token. Subscriptions go over
 * server-sent events through a fetch-based `EventSource`, so the token travels
 * in a header there too, never in the stream's URL.
 */
export function createApi(token: string): Api {
  const url = new URL('/trpc', location.origin).toString();
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === 'subscription',
        true: httpSubscriptionLink({
          url,
          transformer: wireTransformer,
          EventSource,
          eventSourceOptions: () => ({
            fetch: (input: RequestInfo | URL, init?: RequestInit) =>
              fetch(input, { ...init, headers: { ...(init?.headers as object), ...authorization(token) } }),
          }),
        }),
        false: httpLink({ url, transformer: wireTransformer, headers: () => authorization(token) }),
      }),
    ],
  });
}

/** A field's error from the server's payload validation: its path in the payload and the message. */
export interface FieldIssue {
  path: string[];
  message: string;
}

/** What a failed call says: the server's code and message, and any field issues it listed. */
export function describeError(error: unknown): { code: string; message: string; issues: FieldIssue[] } {
  if (error instanceof TRPCClientError) {
    const data = (error.data ?? {}) as { workqCode?: string; code?: string; details?: unknown };
    const issues = Array.isArray(data.details) ? (data.details as FieldIssue[]).filter(isIssue) : [];
    return { code: data.workqCode ?? data.code ?? 'ERROR', message: error.message, issues };
  }
  return { code: 'ERROR', message: error instanceof Error ? error.message : String(error), issues: [] };
}

function isIssue(value: unknown): value is FieldIssue {
  const issue = value as FieldIssue;
  return typeof issue === 'object' && issue !== null && Array.isArray(issue.path) && typeof issue.message === 'string';
}
