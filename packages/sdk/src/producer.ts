import {
  type Catalog,
  type EnqueueOptions,
  type JobName,
  type JobStatus,
  type PayloadInput,
  parseWith,
  type ResultOutput,
  WorkqError,
} from '@workq/core';
import type { EnqueueBatcher } from './enqueue-batcher.ts';
import type { QueueApi } from './transport.ts';

/** A reference to an enqueued job. */
export interface JobHandle<R = unknown> {
  readonly id: string;
  readonly name: string;
  /** `false` when an idempotency key returned an existing job. */
  readonly created: boolean;
  status(): Promise<JobStatus<R>>;
  /** The typed result once the job completes; rejects with a `WorkqError` if it ends dead or cancelled, or `TIMEOUT`. */
  result(options?: { timeoutMs?: number }): Promise<R>;
  /** Resolves to `true` if this call cancelled the job. */
  cancel(): Promise<boolean>;
}

export type EnqueueFns<C extends Catalog> = {
  [N in JobName<C>]: (payload: PayloadInput<C, N>, options?: EnqueueOptions) => Promise<JobHandle<ResultOutput<C, N>>>;
};

export type EnqueueManyFns<C extends Catalog> = {
  [N in JobName<C>]: (
    payloads: readonly PayloadInput<C, N>[],
    options?: EnqueueOptions,
  ) => Promise<JobHandle<ResultOutput<C, N>>[]>;
};

export interface ProducerDeps {
  jobs: Catalog;
  call: <T>(run: (api: QueueApi) => Promise<T>) => Promise<T>;
  /** Resolves once this client's schemas are registered. */
  ready: () => Promise<void>;
  /** Merges enqueues made together into batch requests. */
  enqueues: EnqueueBatcher;
}

const FINISHED = new Set(['completed', 'dead', 'cancelled']);
const RESULT_POLL_MS = 25_000;

/** The job's `defaults` under the caller's options: what the server receives. */
function withDefaults(jobs: Catalog, name: string, options: EnqueueOptions | undefined): EnqueueOptions {
  const defaults = jobs[name]?.defaults ?? {};
  return { ...defaults, ...options };
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
    return this.#deps.call((api) => api.jobs.get.query({ id })) as Promise<JobStatus>;
  }

  #cancel(): Promise<boolean> {
    const { id } = this;
    return this.#deps.call((api) => api.jobs.cancel.mutate({ id }));
  }

  async #result(options?: { timeoutMs?: number }): Promise<unknown> {
    const { id, name } = this;
    const deadline = options?.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    for (;;) {
      const remainingMs = deadline - Date.now();
      const waitMs = Math.max(0, Math.min(RESULT_POLL_MS, remainingMs));
      const current = (await this.#deps.call((api) => api.jobs.wait.query({ id, timeoutMs: waitMs }))) as JobStatus;
      if (current.state === 'completed') {
        const { result } = this.#definition;
        return result ? parseWith(result, current.result, `Result of "${name}"`) : undefined;
      }
      if (FINISHED.has(current.state)) {
        const reason = current.error ? `: ${current.error.message}` : '';
        throw new WorkqError(
          'CONFLICT',
          `Job ${id} (${name}) ended ${current.state} after ${current.attempts} attempt(s)${reason}.`,
          {
            details: { state: current.state, error: current.error },
          },
        );
      }
      if (Date.now() >= deadline) {
        throw new WorkqError(
          'TIMEOUT',
          `Job ${id} (${name}) did not finish within ${options?.timeoutMs} ms; it is ${current.state}.`,
        );
      }
    }
  }
}

export function createHandle(deps: ProducerDeps, name: string, id: string, created: boolean): JobHandle {
  return new Handle(deps, name, id, created);
}

/** Validates a payload with the catalog's current schema (a clear `VALIDATION` error before any request). */
function checkPayload(jobs: Catalog, name: string, payload: unknown): void {
  parseWith(definitionOf(jobs, name).payload, payload, `Payload of "${name}"`);
}

export function createEnqueue<C extends Catalog>(deps: ProducerDeps): EnqueueFns<C> {
  return new Proxy({} as EnqueueFns<C>, {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      return async (payload: unknown, options?: EnqueueOptions) => {
        const definition = definitionOf(deps.jobs, name);
        checkPayload(deps.jobs, name, payload);
        await deps.ready();
        const resolved = withDefaults(deps.jobs, name, options);
        const result = await deps.enqueues.enqueue(name, definition.version, payload, resolved);
        return createHandle(deps, name, result.id, result.created);
      };
    },
  });
}

export function createEnqueueMany<C extends Catalog>(deps: ProducerDeps): EnqueueManyFns<C> {
  return new Proxy({} as EnqueueManyFns<C>, {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      return async (payloads: readonly unknown[], options?: EnqueueOptions) => {
        const definition = definitionOf(deps.jobs, name);
        for (const payload of payloads) checkPayload(deps.jobs, name, payload);
        if (payloads.length === 0) return [];
        await deps.ready();
        const resolved = withDefaults(deps.jobs, name, options);
        const results = await deps.call((api) =>
          api.jobs.enqueueMany.mutate({
            name,
            version: definition.version,
            payloads: [...payloads],
            options: resolved,
          }),
        );
        return results.map((r) => createHandle(deps, name, r.id, r.created));
      };
    },
  });
}
