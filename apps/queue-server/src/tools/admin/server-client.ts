import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { decodeEventBatch, type JobEvent, type ResyncEvent, type WorkqErrorCode, wireTransformer } from '@workq/core';
import type { AppRouter } from '../../router/index.ts';
import { serverSentEvents } from './event-stream.ts';

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
  const request = procedureRequest(target, path, input);
  const signal = AbortSignal.timeout(target.timeoutMs);
  const response = await reach(target, () =>
    type === 'query'
      ? fetch(request.url, { headers: request.headers, signal })
      : fetch(request.base, {
          method: 'POST',
          headers: { ...request.headers, 'content-type': 'application/json' },
          body: request.encoded ?? '{}',
          signal,
        }),
  );
  const body = (await response.json().catch(() => null)) as {
    result?: { data: unknown };
    error?: unknown;
  } | null;
  if (body?.result) return wireTransformer.deserialize(body.result.data as never);
  throw failureOf(body?.error, `The queue server answered HTTP ${response.status}.`);
}

/** A procedure's URL (the input in its query string, as a query and a subscription send it) and headers. */
export function procedureRequest(target: ServerTarget, path: string, input?: unknown) {
  const base = `${target.url.replace(/\/+$/, '')}/trpc/${path}`;
  const encoded = input === undefined ? undefined : JSON.stringify(wireTransformer.serialize(input));
  const headers: Record<string, string> = target.token ? { authorization: `Bearer ${target.token}` } : {};
  const url = encoded === undefined ? base : `${base}?input=${encodeURIComponent(encoded)}`;
  return { base, url, encoded, headers };
}

/** Sends a request, failing with `UNAVAILABLE` when the server cannot be reached or does not answer in time. */
export async function reach(target: ServerTarget, send: () => Promise<Response>): Promise<Response> {
  try {
    return await send();
  } catch (error) {
    const reason =
      error instanceof Error && error.name === 'TimeoutError' ? 'did not answer in time' : 'cannot be reached';
    throw new CallFailed('UNAVAILABLE', `The queue server at ${target.url} ${reason} (${describeCause(error)}).`);
  }
}

/** A tRPC error as sent (through the wire transformer), as a `CallFailed` with its workq code. */
export function failureOf(error: unknown, fallback: string): CallFailed {
  const shape = error ? wireTransformer.deserialize<ErrorShape>(error as never) : undefined;
  const code = (shape?.data?.workqCode as WorkqErrorCode | undefined) ?? 'UNAVAILABLE';
  return new CallFailed(code, shape?.message ?? fallback);
}

interface ErrorShape {
  message: string;
  data?: { workqCode?: string };
}

function describeCause(error: unknown): string {
  const cause = error instanceof Error ? ((error.cause as Error | undefined) ?? error) : error;
  return cause instanceof Error ? cause.message || cause.name : String(cause);
}

/**
 * Subscribes to `events.watch` over server-sent events, as tRPC's
 * `httpSubscriptionLink` does, and yields the events of each batch until
 * `signal` aborts (then it returns). Fails with `CallFailed`: the server's
 * code when it refuses the stream or ends it with an error (`UNAUTHORIZED`,
 * `FORBIDDEN`, `UNAVAILABLE` as it shuts down), `UNAVAILABLE` when it cannot
 * be reached or closes the stream. It does not reconnect.
 */
async function* watchEvents(
  target: ServerTarget,
  input: Inputs['events']['watch'],
  signal: AbortSignal,
): AsyncGenerator<JobEvent | ResyncEvent> {
  const request = procedureRequest(target, 'events.watch', input);
  const headers = { ...request.headers, accept: 'text/event-stream' };
  try {
    const response = await reach(target, () => fetch(request.url, { headers, signal }));
    if (!response.ok || !response.body) {
      const body = (await response.json().catch(() => null)) as { error?: unknown } | null;
      throw failureOf(body?.error, `The queue server answered HTTP ${response.status}.`);
    }
    for await (const message of serverSentEvents(response.body)) {
      if (message.event === 'serialized-error') {
        throw failureOf(JSON.parse(message.data), 'The queue server ended the event stream with an error.');
      }
      if (message.event === 'return') break;
      // `connected` and `ping` carry no events.
      if (message.event === 'message') yield* decodeEventBatch(wireTransformer.deserialize(JSON.parse(message.data)));
    }
  } catch (error) {
    if (signal.aborted) return;
    if (error instanceof CallFailed) throw error;
    throw new CallFailed('UNAVAILABLE', `The event stream from ${target.url} broke (${describeCause(error)}).`);
  }
  if (!signal.aborted) throw new CallFailed('UNAVAILABLE', `The queue server at ${target.url} ended the event stream.`);
}

/** The admin operations the CLI uses, typed by the server's router. */
export function adminClient(target: ServerTarget) {
  const query = <T>(path: string, input?: unknown) => callProcedure(target, 'query', path, input) as Promise<T>;
  const mutate = <T>(path: string, input?: unknown) => callProcedure(target, 'mutation', path, input) as Promise<T>;
  return {
    queues: () => query<Outputs['admin']['queues']>('admin.queues'),
    list: (input: Inputs['admin']['list']) => query<Outputs['admin']['list']>('admin.list', input),
    job: (id: string) => query<Outputs['admin']['job']>('admin.job', { id }),
    retryDead: (input: Inputs['admin']['retryDead']) => mutate<Outputs['admin']['retryDead']>('admin.retryDead', input),
    cancel: (id: string) => mutate<Outputs['jobs']['cancel']>('jobs.cancel', { id }),
    replay: (id: string) => mutate<Outputs['admin']['replay']>('admin.replay', { id }),
    workers: () => query<Outputs['admin']['workers']>('admin.workers'),
    schedules: () => query<Outputs['admin']['schedules']>('admin.schedules'),
    pause: (name: string) => mutate<void>('admin.pause', { name }),
    resume: (name: string) => mutate<void>('admin.resume', { name }),
    setLimits: (input: Inputs['admin']['setLimits']) => mutate<Outputs['admin']['setLimits']>('admin.setLimits', input),
    upsertSchedule: (input: Inputs['admin']['upsertSchedule']) =>
      mutate<Outputs['admin']['upsertSchedule']>('admin.upsertSchedule', input),
    removeSchedule: (key: string) => mutate<Outputs['admin']['removeSchedule']>('admin.removeSchedule', { key }),
    schemas: (name?: string) => query<Outputs['schemas']['list']>('schemas.list', name ? { name } : undefined),
    removeSchema: (name: string, version: number) =>
      mutate<Outputs['admin']['removeSchema']>('admin.removeSchema', { name, version }),
    watchEvents: (input: Inputs['events']['watch'], signal: AbortSignal) => watchEvents(target, input, signal),
  };
}

export type AdminClient = ReturnType<typeof adminClient>;
