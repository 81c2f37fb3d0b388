import { TRPCClientError } from '@trpc/client';
import { createQueueApi, type QueueApi } from '@workq/sdk';

const TOKEN_KEY = 'workq.dashboard.token';

/** The token lives in this tab's session storage only: never in a URL, never in local storage. */
export const session = {
  /** The token this tab signed in with (`''` for a server without tokens), or `null` before signing in. */
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  signIn: (token: string): void => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: (): void => sessionStorage.removeItem(TOKEN_KEY),
};

/**
 * The SDK's client of the server this page came from, with `token` as its bearer token: in a header on every
 * request, subscriptions' event streams included, never in a URL.
 */
export function createApi(token: string): QueueApi {
  return createQueueApi({ url: location.origin, token });
}

/** A field's error from the server's payload validation: its path in the payload and the message. */
export interface FieldIssue {
  path: string[];
  message: string;
}

/** The codes that mean the server or its store could not be reached, rather than that it refused. */
const OUTAGE_CODES = new Set(['UNAVAILABLE', 'TIMEOUT']);

/**
 * What a failed call says: the server's code and message, any field issues it listed, and whether it is an
 * outage (the server unreachable, or its store down), worded as one instead of the browser's "Failed to fetch".
 */
export function describeError(error: unknown): {
  code: string;
  message: string;
  issues: FieldIssue[];
  outage: boolean;
} {
  if (error instanceof TRPCClientError && error.data) {
    const data = error.data as { workqCode?: string; code?: string; details?: unknown };
    const issues = Array.isArray(data.details) ? (data.details as FieldIssue[]).filter(isIssue) : [];
    const code = data.workqCode ?? data.code ?? 'ERROR';
    const outage = OUTAGE_CODES.has(code);
    const message = outage ? `The queue server's store is not answering: ${error.message}` : error.message;
    return { code, message, issues, outage };
  }
  // No answer at all (the fetch itself failed, or the answer was not the server's): the server is out of reach.
  if (error instanceof TRPCClientError || error instanceof TypeError) {
    const message = `The queue server at ${location.origin} cannot be reached (it may be down or restarting). Retrying.`;
    return { code: 'UNAVAILABLE', message, issues: [], outage: true };
  }
  return { code: 'ERROR', message: error instanceof Error ? error.message : String(error), issues: [], outage: false };
}

function isIssue(value: unknown): value is FieldIssue {
  const issue = value as FieldIssue;
  return typeof issue === 'object' && issue !== null && Array.isArray(issue.path) && typeof issue.message === 'string';
}
