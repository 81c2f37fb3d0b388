import { TRPCClientError } from '@trpc/client';
import { wireTransformer } from '@workq/core';

/** The `Authorization` header of a request, or a function that gives it per request (see transport.ts). */
export type AuthHeaders = { authorization?: string };
export type HeaderSource = AuthHeaders | (() => AuthHeaders | Promise<AuthHeaders>);

/** Where mutations are sent: the server's tRPC base URL, the request headers, and the fetch to send them with. */
export interface PlainMutationOptions {
  /** The base URL of the procedures, e.g. `http://127.0.0.1:4000/trpc`. */
  url: string;
  headers: HeaderSource;
  fetch: typeof fetch;
}

/**
 * The typed tRPC client `client`, with every `mutate(input, { signal })` sent as one plain HTTP request in
 * tRPC's wire format (a `POST` of the serialized input, answered `{ result }` or `{ error }`), the same request
 * `httpLink` would send; queries and subscriptions go through `client` as they are. A failure is the
 * `TRPCClientError` tRPC's client would throw: the server's error shape in `data`, or the fetch's failure as
 * `cause`.
 *
 * Why: a call through tRPC's client makes three abort controllers and aborts one of them when it succeeds
 * (the abort builds a `DOMException`, stack trace and all), several times the CPU of the request itself.
 * Claims and enqueues are mutations, and each lies on the path from an enqueue to its handler's start.
 */
export function withPlainMutations<T extends object>(client: T, options: PlainMutationOptions): T {
  const nodes = new Map<string, object>();
  const node = (path: string): object => {
    let found = nodes.get(path);
    if (found) return found;
    found = new Proxy(
      {},
      {
        get: (_target, key) => {
          if (typeof key !== 'string') return undefined;
          if (key === 'mutate') return (input: unknown, opts?: { signal?: AbortSignal }) => mutate(path, input, opts);
          if (key === 'query' || key === 'subscribe') return procedureOf(client, path)[key];
          return node(path === '' ? key : `${path}.${key}`);
        },
      },
    );
    nodes.set(path, found);
    return found;
  };
  const mutate = (path: string, input: unknown, opts?: { signal?: AbortSignal }) =>
    sendMutation(options, path, input, opts?.signal);
  return node('') as T;
}

/** The procedure at dotted `path` on tRPC's client proxy. */
function procedureOf(client: object, path: string): Record<string, unknown> {
  let at = client as Record<string, unknown>;
  for (const key of path.split('.')) at = at[key] as Record<string, unknown>;
  return at;
}

/** Sends one mutation and resolves to its output, or rejects with the `TRPCClientError` tRPC's client would. */
async function sendMutation(
  options: PlainMutationOptions,
  path: string,
  input: unknown,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const auth = typeof options.headers === 'function' ? await options.headers() : options.headers;
  let response: Response;
  let json: unknown;
  try {
    const send = options.fetch;
    response = await send(`${options.url}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify(wireTransformer.serialize(input)),
      ...(signal ? { signal } : {}),
    });
    json = await response.json();
  } catch (cause) {
    throw TRPCClientError.from(cause as Error);
  }
  const meta = { response, responseJSON: json };
  const answer = json as { result?: { data?: unknown }; error?: unknown };
  if (typeof answer === 'object' && answer !== null && 'error' in answer) {
    const error = wireTransformer.deserialize(answer.error as Parameters<typeof wireTransformer.deserialize>[0]);
    throw TRPCClientError.from({ error }, { meta });
  }
  if (typeof answer !== 'object' || answer === null || typeof answer.result !== 'object' || answer.result === null) {
    throw TRPCClientError.from(new Error('Badly formatted response from server'), { meta });
  }
  return wireTransformer.deserialize(answer.result.data as Parameters<typeof wireTransformer.deserialize>[0]);
}
