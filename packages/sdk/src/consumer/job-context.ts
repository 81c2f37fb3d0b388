import { type AnyJobDefinition, type EnqueueOptions, parseWith } from '@workq/core';
import type { TracingLoader } from '../tracing.ts';
import type { Call } from '../transport.ts';
import type { JobAbort } from './lease-keeper.ts';
import type { JobContext } from './types.ts';

export interface JobContextDeps {
  /** Resolves a job name (the job's own, or a `moveTo` target) to its definition (or fails with UNKNOWN_JOB). */
  definitionOf: (name: string) => AnyJobDefinition;
  call: Call;
  /** Spans around handlers, and the trace context a `moveTo` passes on. @defaultValue none */
  tracing?: TracingLoader;
}

/**
 * The `ctx` a handler gets. A worker makes one per job, thousands a second,
 * so it makes no closures up front: each method is a getter that returns one
 * bound to this job (so a destructured `progress` or `moveTo` still works).
 */
export class HandlerContext implements JobContext<never> {
  readonly #deps: JobContextDeps;
  readonly #lease: { id: string; leaseToken: string; name: string };
  readonly #jobAbort: JobAbort;
  #moved = false;

  constructor(deps: JobContextDeps, lease: { id: string; leaseToken: string; name: string }, jobAbort: JobAbort) {
    this.#deps = deps;
    this.#lease = lease;
    this.#jobAbort = jobAbort;
  }

  /** Whether the handler ended this job with `moveTo`, so its return value is ignored. */
  get moved(): boolean {
    return this.#moved;
  }

  get signal(): AbortSignal {
    return this.#jobAbort.signal;
  }

  get progress(): (percent: number) => Promise<void> {
    return (percent) => this.#progress(percent);
  }

  get updatePayload(): (payload: never) => Promise<void> {
    return (payload) => this.#updatePayload(payload);
  }

  get moveTo(): (name: never, payload: never, options?: object) => Promise<void> {
    return (name, payload, options) => this.#moveTo(name, payload, options);
  }

  async #progress(percent: number): Promise<void> {
    const { id, leaseToken } = this.#lease;
    await this.#deps.call((api, signal) =>
      api.consumer.progress.mutate({ id, leaseToken, progress: percent }, { signal }),
    );
  }

  async #updatePayload(payload: unknown): Promise<void> {
    const { id, leaseToken, name } = this.#lease;
    const { version, payload: schema } = this.#deps.definitionOf(name);
    parseWith(schema, payload, `updatePayload payload of "${name}"`);
    await this.#deps.call((api, signal) =>
      api.consumer.updatePayload.mutate({ id, leaseToken, name, version, payload }, { signal }),
    );
  }

  async #moveTo(nextName: string, payload: unknown, nextOptions?: object): Promise<void> {
    const next = this.#deps.definitionOf(nextName);
    parseWith(next.payload, payload, `moveTo payload of "${nextName}"`);
    const options: EnqueueOptions = { ...next.defaults, ...nextOptions };
    // The next job is created in this handler's `process` span: its own processing links to it.
    options.traceContext ??= this.#deps.tracing?.resolved?.activeContext();
    const nextJob = { name: nextName, version: next.version, payload, options };
    const { id, leaseToken } = this.#lease;
    await this.#deps.call((api, signal) => api.consumer.moveTo.mutate({ id, leaseToken, next: nextJob }, { signal }));
    this.#moved = true;
  }
}
