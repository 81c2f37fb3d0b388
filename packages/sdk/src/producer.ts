import {
  type Catalog,
  type EnqueueOptions,
  isFinishedState,
  type JobName,
  type JobStatus,
  newJobId,
  type PayloadInput,
  parseWith,
  type ResultOutput,
  type TraceContext,
  WorkqError,
} from '@workq/core';
import type { EnqueueBatcher } from './enqueue-batcher.ts';
import { enqueueFailed, type SentIds } from './enqueue-failure.ts';
import { type ChildJob, checkChildren, type ParentOptions } from './flows.ts';
import { BeforeSending, type EnqueueRetryPolicy, sendWithRetries } from './retry.ts';
import type { TracingLoader } from './tracing.ts';
import type { Call } from './transport.ts';

/** A reference to an enqueued job. */
export interface JobHandle<R = unknown> {
  readonly id: string;
  readonly name: string;
  /**
   * `false` when an idempotency key, or an id the caller chose, returned an existing job. Always `true` for a
   * job under the id the SDK made up for it: only this call knew it, so whichever of its attempts stored the
   * job, the job is this call's.
   */
  readonly created: boolean;
  status(): Promise<JobStatus<R>>;
  /**
   * The typed result once the job completes. Rejects with `JOB_FAILED` if it ends dead (`details.error`: its
   * last error), `CONFLICT` if it is cancelled, or `TIMEOUT` after `timeoutMs` (none: waits as long as it
   * takes), which says so when no worker reads the job's type and version. Each wait on the server is one long-poll
   * request, whose time limit is its wait plus the client's `timeoutMs`.
   */
  result(options?: { timeoutMs?: number | undefined }): Promise<R>;
  /** Resolves to `true` if this call cancelled the job. */
  cancel(): Promise<boolean>;
}

export type EnqueueFns<C extends Catalog> = {
  [N in JobName<C>]: (
    payload: PayloadInput<C, N>,
    options?: EnqueueOptions & ParentOptions<C>,
  ) => Promise<JobHandle<ResultOutput<C, N>>>;
};

/** The options of one `enqueueMany` call: those every job gets, and those of each job. */
export interface EnqueueManyOptions extends EnqueueOptions {
  /**
   * Each job's own options, by index (one entry per payload; `undefined` for none), over the shared ones:
   * an `id` or `idempotencyKey` per job, so that sending the same batch again returns the same jobs (an id or
   * a key in the shared options is one for the whole batch, which makes it one job), or a priority, delay or
   * run time of its own.
   */
  perJob?: readonly (EnqueueOptions | undefined)[] | undefined;
}

export type EnqueueManyFns<C extends Catalog> = {
  [N in JobName<C>]: (
    payloads: readonly PayloadInput<C, N>[],
    options?: EnqueueManyOptions,
  ) => Promise<JobHandle<ResultOutput<C, N>>[]>;
};

export interface ProducerDeps {
  jobs: Catalog;
  call: Call;
  /** Resolves once this client's schemas are registered. */
  ready: () => Promise<void>;
  /** Merges enqueues made together into batch requests. */
  enqueues: EnqueueBatcher;
  /** How an enqueue is sent again after `UNAVAILABLE` or `TIMEOUT`. */
  retry: EnqueueRetryPolicy;
  /** Spans around enqueues, when OpenTelemetry is there. */
  tracing: TracingLoader;
}

const RESULT_POLL_MS = 25_000;

/**
 * The job's `defaults`, and its type's time limit (`defineJob({ timeoutMs })`, so the server enforces it per job),
 * under the caller's options: what the server receives.
 */
function withDefaults(jobs: Catalog, name: string, options: EnqueueOptions | undefined): EnqueueOptions {
  const definition = jobs[name];
  const defaults = definition?.defaults ?? {};
  const timeoutMs = definition?.timeoutMs;
  return timeoutMs === undefined ? { ...defaults, ...options } : { ...defaults, timeoutMs, ...options };
}

/** The catalog's definition of job `name`, or `UNKNOWN_JOB` when the catalog has none. */
export function definitionOf(jobs: Catalog, name: string) {
  const definition = Object.hasOwn(jobs, name) ? jobs[name] : undefined;
  if (!definition) throw new WorkqError('UNKNOWN_JOB', `"${name}" is not in this client's catalog.`);
  return definition;
}

type JobDefinitionLike = ReturnType<typeof definitionOf>;

/**
 * A bulk enqueue makes a thousand handles, most of which are never used, so
 * a handle makes no closures up front: each method is a getter that returns
 * one bound to this handle (so a destructured `result` still works).
 */
class Handle implements JobHandle {
  readonly #deps: ProducerDeps;
  readonly #definition: JobDefinitionLike;

  constructor(
    deps: ProducerDeps,
    readonly name: string,
    readonly id: string,
    readonly created: boolean,
  ) {
    this.#deps = deps;
    this.#definition = definitionOf(deps.jobs, name);
  }

  get status(): () => Promise<JobStatus> {
    return () => this.#status();
  }

  get cancel(): () => Promise<boolean> {
    return () => this.#cancel();
  }

  get result(): (options?: { timeoutMs?: number }) => Promise<unknown> {
    return (options) => this.#result(options);
  }

  #status(): Promise<JobStatus> {
    const { id } = this;
    return this.#deps.call((api, signal) => api.jobs.get.query({ id }, { signal })) as Promise<JobStatus>;
  }

  #cancel(): Promise<boolean> {
    const { id } = this;
    return this.#deps.call((api, signal) => api.jobs.cancel.mutate({ id }, { signal }));
  }

  async #result(options?: { timeoutMs?: number }): Promise<unknown> {
    const { id, name } = this;
    const deadline = options?.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    for (;;) {
      const remainingMs = deadline - Date.now();
      const waitMs = Math.max(0, Math.min(RESULT_POLL_MS, remainingMs));
      // The server holds the request up to `waitMs`: the request's time limit starts after that.
      const current = (await this.#deps.call(
        (api, signal) => api.jobs.wait.query({ id, timeoutMs: waitMs }, { signal }),
        { waitMs },
      )) as JobStatus & { workersReading?: number };
      if (current.state === 'completed') {
        const { result } = this.#definition;
        return result ? parseWith(result, current.result, `Result of "${name}"`) : undefined;
      }
      if (isFinishedState(current.state)) throw endedUnfinished(current);
      if (Date.now() >= deadline) throw waitedInVain(current, options?.timeoutMs);
    }
  }
}

/**
 * `JOB_FAILED` for a job that ended dead, carrying its last error (`details.error`) and state; `CONFLICT`
 * for one that was cancelled.
 */
function endedUnfinished(job: JobStatus): WorkqError {
  const { id, name, state, attempts, error } = job;
  const details = { state, error };
  if (state !== 'dead') {
    return new WorkqError('CONFLICT', `Job ${id} (${name}) was ${state} after ${attempts} attempt(s).`, { details });
  }
  const reason = error ? `: ${error.name ? `${error.name}: ` : ''}${error.message}` : '.';
  const why = error?.permanent ? 'a permanent failure' : `${attempts} attempt(s)`;
  return new WorkqError('JOB_FAILED', `Job ${id} (${name}) is dead after ${why}${reason}`, { details });
}

/** `TIMEOUT` for a job not finished in time, saying so when no worker reads its type and version. */
function waitedInVain(job: JobStatus & { workersReading?: number }, timeoutMs: number | undefined): WorkqError {
  const { id, name, version, state } = job;
  const none =
    job.workersReading === 0 && (state === 'ready' || state === 'scheduled')
      ? ` No worker is consuming "${name}" v${version}: start one (sdk.consume('${name}', handler), its catalog reading v${version}), and the job runs.`
      : '';
  return new WorkqError(
    'TIMEOUT',
    `Job ${id} (${name}) did not finish within ${timeoutMs} ms; it is ${state}.${none}`,
    {
      details: { state, ...(job.workersReading === undefined ? {} : { workersReading: job.workersReading }) },
    },
  );
}

export function createHandle(deps: ProducerDeps, name: string, id: string, created: boolean): JobHandle {
  return new Handle(deps, name, id, created);
}

/** Validates a payload with the catalog's current schema (a clear `VALIDATION` error before any request). */
function checkPayload(jobs: Catalog, name: string, payload: unknown): void {
  parseWith(definitionOf(jobs, name).payload, payload, `Payload of "${name}"`);
}

/** Marks a failure of the catalog's registration, which comes before an enqueue's request. */
function beforeSending(failure: unknown): never {
  throw new BeforeSending(failure);
}

export function createEnqueue<C extends Catalog>(deps: ProducerDeps): EnqueueFns<C> {
  return new Proxy({} as EnqueueFns<C>, {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      return async (payload: unknown, options?: EnqueueOptions & ParentOptions<Catalog>) => {
        const { version } = definitionOf(deps.jobs, name);
        checkPayload(deps.jobs, name, payload);
        const { children: given, ...own } = options ?? {};
        const children = checkChildren(given, `"${name}"`);
        const resolved = withDefaults(deps.jobs, name, own);
        // A flow's jobs are kept for the server-wide retention: the type's default one stays out of a parent's.
        if (children !== undefined && own.retention === undefined) delete resolved.retention;
        // Under an id of its own, a retried enqueue (a flow's too) finds the job an earlier attempt stored, if one did.
        const madeUpId = takesMadeUpId(resolved) ? newJobId() : undefined;
        if (madeUpId !== undefined) resolved.id = madeUpId;
        const send = async (traceContext: TraceContext | undefined): Promise<JobHandle> => {
          resolved.traceContext ??= traceContext;
          try {
            const result = await sendWithRetries(deps.retry, async (timeoutMs) => {
              await deps.ready().catch(beforeSending);
              if (children) return sendFlow(deps, { name, version, payload, options: resolved, children }, timeoutMs);
              return deps.enqueues.enqueue(name, version, payload, resolved, timeoutMs);
            });
            // Nobody else knows a made-up id: the job under it is this call's, whichever attempt stored it.
            return createHandle(deps, name, result.id, result.created || result.id === madeUpId);
          } catch (error) {
            throw enqueueFailed(error, name, 1, { ids: resolved.id, keys: resolved.idempotencyKey });
          }
        };
        const loaded = deps.tracing.get();
        // Awaited only until `@opentelemetry/api` has been looked for, so later enqueues keep their turn.
        const tracing = loaded instanceof Promise ? await loaded : loaded;
        return tracing ? tracing.create(name, 1, send, (handle) => handle.id) : send(undefined);
      };
    },
  });
}

/**
 * A parent and its children in one request of their own, never merged with other enqueues: the server stores
 * the whole flow in one atomic step, under the parent's id (and its idempotency key, when it has one).
 */
function sendFlow(
  deps: ProducerDeps,
  flow: { name: string; version: number; payload: unknown; options: EnqueueOptions; children: ChildJob[] },
  timeoutMs: number | undefined,
): Promise<{ id: string; created: boolean }> {
  return deps.call(
    (api, signal) => api.jobs.enqueue.mutate(flow, { signal }),
    timeoutMs === undefined ? undefined : { timeoutMs },
  );
}

/**
 * Whether an enqueue with `options` is sent under an id made up for it (a UUIDv7, so jobs keep the order they
 * were made in): not when the caller chose one, nor for a debounce, whose job is found by its key (and which
 * is safe to send again as it is: a repeat replaces the waiting job's payload with the same one).
 */
function takesMadeUpId(options: EnqueueOptions): boolean {
  return options.id === undefined && options.debounce === undefined;
}

/**
 * The id each job of a batch is sent under where it has none of its own (`null` where it has), or `undefined`
 * when none is made up: the batch shares one id, or is debounced.
 */
function madeUpIds(
  count: number,
  shared: EnqueueOptions,
  perJob: EnqueueManyOptions['perJob'],
): (string | null)[] | undefined {
  if (!takesMadeUpId(shared)) return undefined;
  const ids: (string | null)[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const own = perJob?.[i];
    ids[i] = own === undefined || takesMadeUpId(own) ? newJobId() : null;
  }
  return ids;
}

/** What each job of a batch went out under (`null`: nothing), or the batch's one id and key. */
function sentUnder(
  count: number,
  shared: EnqueueOptions,
  perJob: EnqueueManyOptions['perJob'],
  madeUp: readonly (string | null)[] | undefined,
): SentIds {
  if (!madeUp && !perJob) return { ids: shared.id, keys: shared.idempotencyKey };
  return {
    ids: Array.from({ length: count }, (_, i) => madeUp?.[i] ?? perJob?.[i]?.id ?? shared.id ?? null),
    keys: Array.from({ length: count }, (_, i) => perJob?.[i]?.idempotencyKey ?? shared.idempotencyKey ?? null),
  };
}

export function createEnqueueMany<C extends Catalog>(deps: ProducerDeps): EnqueueManyFns<C> {
  return new Proxy({} as EnqueueManyFns<C>, {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      return async (payloads: readonly unknown[], options?: EnqueueManyOptions) => {
        const { version } = definitionOf(deps.jobs, name);
        for (const payload of payloads) checkPayload(deps.jobs, name, payload);
        const { perJob, ...own } = options ?? {};
        // Types keep `children` out of a batch; plain JavaScript may not, and a flow must not become plain jobs.
        if ([own, ...(perJob ?? [])].some((each) => each !== undefined && 'children' in each)) {
          throw new WorkqError(
            'VALIDATION',
            `enqueueMany makes plain jobs and takes no children: enqueue each flow on its own, with sdk.enqueue.${name}(payload, { children }).`,
          );
        }
        if (perJob !== undefined && perJob.length !== payloads.length) {
          throw new WorkqError(
            'VALIDATION',
            `perJob has ${perJob.length} entries for ${payloads.length} payloads; give one per payload (undefined for none).`,
          );
        }
        if (payloads.length === 0) return [];
        const shared = withDefaults(deps.jobs, name, own);
        const loaded = deps.tracing.get();
        // Awaited only until `@opentelemetry/api` has been looked for, so later enqueues keep their turn.
        const tracing = loaded instanceof Promise ? await loaded : loaded;
        if (tracing) {
          const send = (traceContext: TraceContext | undefined) => {
            shared.traceContext ??= traceContext;
            return sendBatch(deps, name, version, payloads, shared, perJob);
          };
          return tracing.create(name, payloads.length, send, () => undefined);
        }
        return sendBatch(deps, name, version, payloads, shared, perJob);
      };
    },
  });
}

/** Sends one `enqueueMany` batch (retried as `enqueue` is) and makes its handles. */
async function sendBatch(
  deps: ProducerDeps,
  name: string,
  version: number,
  payloads: readonly unknown[],
  shared: EnqueueOptions,
  perJob: EnqueueManyOptions['perJob'],
): Promise<JobHandle[]> {
  const ids = madeUpIds(payloads.length, shared, perJob);
  const request = {
    name,
    version,
    payloads: [...payloads],
    options: shared,
    ...(perJob ? { perJob: perJob.map((entry) => entry ?? null) } : {}),
    ...(ids ? { ids } : {}),
  };
  try {
    const results = await sendWithRetries(deps.retry, async (timeoutMs) => {
      await deps.ready().catch(beforeSending);
      return deps.call((api, signal) => api.jobs.enqueueMany.mutate(request, { signal }), { timeoutMs });
    });
    return results.map((r, i) => createHandle(deps, name, r.id, r.created || r.id === ids?.[i]));
  } catch (error) {
    throw enqueueFailed(error, name, payloads.length, sentUnder(payloads.length, shared, perJob, ids));
  }
}
