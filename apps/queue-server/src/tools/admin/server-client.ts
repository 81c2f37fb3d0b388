import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { type WorkqErrorCode, wireTransformer } from '@workq/core';
import type { AppRouter } from '../../router/index.ts';

type Inputs = inferRouterInputs<AppRouter>;
type Outputs = inferRouterOutputs<AppRouter>;

/** A failed call, as the CLI reports it: the workq code and the server's message. */
export class CallFailed extends Error {
  constructor(
    readonly code: WorkqErrorCode | 'UNAVAILABLE',
    message: string,
  ) {
    super(message);
  }
}

export interface ServerTarget {
  /** The queue server's base URL, e.g. `http://127.0.0.1:4000`. */
  url: string;
  /** A bearer token with the `admin` scope; none when the server runs without tokens. */
  token: string | undefined;
  /** How long one request may take. */
  timeoutMs: number;
}

/**
 * Calls one tRPC procedure over plain HTTP, as tRPC's own `httpLink` does
 * (a query as `GET /trpc/<path>?input=…`, a mutation as a JSON `POST`, both
 * through the wire transformer), so the server package needs no client
 * library. Fails with `CallFailed`: the server's workq code and message, or
 * `UNAVAILABLE` when it cannot be reached.
 */
export async function callProcedure(
  target: ServerTarget,
  type: 'query' | 'mutation',
  path: string,
  input?: unknown,
): Promise<unknown> {
  const base = `${target.url.replace(/\/+$/, '')}/trpc/${path}`;
  const encoded = input === undefined ? undefined : JSON.stringify(wireTransformer.serialize(input));
  const headers: Record<string, string> = target.token ? { authorization: `Bearer ${target.token}` } : {};
  let response: Response;
  try {
    response =
      type === 'query'
        ? await fetch(encoded === undefined ? base : `${base}?input=${encodeURIComponent(encoded)}`, {
            headers,
            signal: AbortSignal.timeout(target.timeoutMs),
          })
        : await fetch(base, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: encoded ?? '{}',
            signal: AbortSignal.timeout(target.timeoutMs),
          });
  } catch (error) {
    const reason =
      error instanceof Error && error.name === 'TimeoutError' ? 'did not answer in time' : 'cannot be reached';
    throw new CallFailed('UNAVAILABLE', `The queue server at ${target.url} ${reason} (${describeCause(error)}).`);
  }
  const body = (await response.json().catch(() => null)) as {
    result?: { data: unknown };
    error?: unknown;
  } | null;
  if (body?.result) return wireTransformer.deserialize(body.result.data as never);
  const shape = body?.error ? wireTransformer.deserialize<ErrorShape>(body.error as never) : undefined;
  const code = (shape?.data?.workqCode as WorkqErrorCode | undefined) ?? 'UNAVAILABLE';
  throw new CallFailed(code, shape?.message ?? `The queue server answered HTTP ${response.status}.`);
}

interface ErrorShape {
  message: string;
  data?: { workqCode?: string };
}

function describeCause(error: unknown): string {
  const cause = error instanceof Error ? ((error.cause as Error | undefined) ?? error) : error;
  return cause instanceof Error ? cause.message || cause.name : String(cause);
}

/** The admin operations the CLI uses, typed by the server's router. */
export function adminClient(target: ServerTarget) {
  const query = <T>(path: string, input?: unknown) => callProcedure(target, 'query', path, input) as Promise<T>;
  const mutate = <T>(path: string, input?: unknown) => callProcedure(target, 'mutation', path, input) as Promise<T>;
  return {
    queues: () => query<Outputs['admin']['queues']>('admin.queues'),
    list: (input: Inputs['admin']['list']) => query<Outputs['admin']['list']>('admin.list', input),
    job: (id: string) => query<Outputs['admin']['job']>('admin.job', { id }),
    retryDead: (ids: string[]) => mutate<Outputs['admin']['retryDead']>('admin.retryDead', { ids }),
    cancel: (id: string) => mutate<Outputs['jobs']['cancel']>('jobs.cancel', { id }),
    replay: (id: string) => mutate<Outputs['admin']['replay']>('admin.replay', { id }),
    workers: () => query<Outputs['admin']['workers']>('admin.workers'),
    schedules: () => query<Outputs['admin']['schedules']>('admin.schedules'),
  };
}

export type AdminClient = ReturnType<typeof adminClient>;
