import {
  type AnyJobDefinition,
  type Catalog,
  type EnqueueOptions,
  type JobError,
  type JobState,
  parseWith,
  WorkqError,
} from '@workq/core';
import { type ChildJob, checkChildren } from '../flows.ts';
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

/** A child of the running job as the server sends it: its result as stored, parsed when the handler reads it. */
export interface ChildRecord {
  id: string;
  name: string;
  state: JobState;
  result?: unknown;
  error?: JobError;
}

/** What a parent's handler is told of its flow: whether it runs after its own `waitForChildren`, and its children. */
export interface FlowOfJob {
  resumed: boolean;
  /** In enqueue order. */
  children: readonly ChildRecord[];
}

const NO_FLOW: FlowOfJob = Object.freeze({ resumed: false, children: Object.freeze([]) });

/**
 * Every child of the job `lease` holds, in enqueue order: what a resumed parent's handler is handed. Read page
 * by page (the server's largest), fenced by the lease; a page says whether more follow, so a parent with up to a
 * page of children is read in one round trip. `first`: the first page, when the claim's answer carried it
 * (`ClaimedJob.children`); the pages after it are read.
 */
export async function readChildren(
  call: Call,
  lease: { id: string; leaseToken: string },
  first?: ChildrenPage,
): Promise<ChildRecord[]> {
  const { id, leaseToken } = lease;
  const children: ChildRecord[] = [];
  let page = first;
  for (;;) {
    if (page) {
      children.push(...(page.children as ChildRecord[]));
      if (!page.more || page.children.length === 0) return children;
    }
    const afterId = children.at(-1)?.id;
    page = await call((api, signal) =>
      api.consumer.children.query({ id, leaseToken, ...(afterId ? { afterId } : {}) }, { signal }),
    );
  }
}

/** A page of a held job's children as the server answers it. */
interface ChildrenPage {
  children: readonly unknown[];
  more: boolean;
}

/**
 * What `ctx.waitForChildren`, `ctx.delay`, `ctx.retryAt` and `ctx.rateLimited` resolve to: the worker then
 * neither completes nor fails the job.
 */
const WAITING = Object.freeze({});

/** `ms` when it is a positive finite number; the server checks its upper bound. */
function checkMs(ms: unknown, what: string): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new WorkqError('VALIDATION', `${what} takes a number of milliseconds above 0; got ${String(ms)}.`);
  }
  return ms;
}

/**
 * The `ctx` a handler gets. A worker makes one per job, thousands a second,
 * so it makes no closures up front: each method is a getter that returns one
 * bound to this job (so a destructured `progress` or `moveTo` still works).
 */
export class HandlerContext implements JobContext<Catalog> {
  readonly #deps: JobContextDeps;
  readonly #lease: { id: string; leaseToken: string; name: string };
  readonly #jobAbort: JobAbort;
  #flow: FlowOfJob;
  #children: readonly ChildRecord[] | undefined;
  #moved = false;
  #waiting = false;

  constructor(deps: JobContextDeps, lease: { id: string; leaseToken: string; name: string }, jobAbort: JobAbort) {
    this.#deps = deps;
    this.#lease = lease;
    this.#jobAbort = jobAbort;
    this.#flow = NO_FLOW;
  }

  /** Tells the handler it runs after `children` (`ctx.resumed`, `ctx.children`): set before it runs. */
  resumeAfter(children: readonly ChildRecord[]): void {
    this.#flow = { resumed: true, children };
    this.#children = undefined;
  }

  /**
   * Whether the handler ended this attempt itself, with `moveTo`, `waitForChildren`, `delay`, `retryAt` or
   * `rateLimited`, so its return value is ignored and the job is neither completed nor failed.
   */
  get ended(): boolean {
    return this.#moved || this.#waiting;
  }

  get resumed(): boolean {
    return this.#flow.resumed;
  }

  /** The children with their results parsed by their types' schemas, made once, on the first read. */
  get children(): readonly ChildRecord[] {
    this.#children ??= this.#flow.children.map((child) => {
      if (child.result === undefined) return child;
      return { ...child, result: this.#parseResult(child.name, child.id, child.result) };
    });
    return this.#children;
  }

  get childResults(): (name: string) => Promise<unknown[]> {
    return async (name) => {
      // Refuses a type the catalog lacks, as `enqueue` and `moveTo` do, rather than answering with none.
      this.#deps.definitionOf(name);
      return this.children.filter((c) => c.name === name && c.state === 'completed').map((c) => c.result);
    };
  }

  get waitForChildren(): (children: readonly ChildJob[]) => Promise<never> {
    return (children) => this.#waitForChildren(children) as Promise<never>;
  }

  get delay(): (ms: number) => Promise<never> {
    return (ms) => this.#delay(ms) as Promise<never>;
  }

  get retryAt(): (date: Date) => Promise<never> {
    return (date) => {
      if (!(date instanceof Date) || Number.isNaN(date.getTime())) {
        return Promise.reject(new WorkqError('VALIDATION', `ctx.retryAt takes a valid Date; got ${String(date)}.`));
      }
      return this.#snooze({ runAt: date }) as Promise<never>;
    };
  }

  get rateLimited(): (ms: number) => Promise<never> {
    return (ms) => this.#rateLimited(ms) as Promise<never>;
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

  #parseResult(name: string, id: string, result: unknown): unknown {
    const schema = this.#deps.definitionOf(name).result;
    return schema ? parseWith(schema, result, `Result of child ${id} ("${name}")`) : undefined;
  }

  async #waitForChildren(given: readonly ChildJob[]): Promise<object> {
    const { id, leaseToken, name } = this.#lease;
    const children = checkChildren(given, `job ${id} ("${name}")`);
    if (!children) {
      throw new WorkqError('VALIDATION', `waitForChildren of job ${id} ("${name}") was given no children.`);
    }
    await this.#deps.call((api, signal) =>
      api.consumer.waitForChildren.mutate({ id, leaseToken, children }, { signal }),
    );
    this.#waiting = true;
    return WAITING;
  }

  async #delay(ms: unknown): Promise<object> {
    return this.#snooze({ delayMs: checkMs(ms, 'ctx.delay') });
  }

  async #snooze(until: { delayMs: number } | { runAt: Date }): Promise<object> {
    const { id, leaseToken, name } = this.#lease;
    await this.#deps.call((api, signal) => api.consumer.snooze.mutate({ id, leaseToken, name, ...until }, { signal }));
    this.#waiting = true;
    return WAITING;
  }

  async #rateLimited(ms: unknown): Promise<object> {
    const holdMs = checkMs(ms, 'ctx.rateLimited');
    const { id, leaseToken } = this.#lease;
    await this.#deps.call((api, signal) => api.consumer.rateLimited.mutate({ id, leaseToken, holdMs }, { signal }));
    this.#waiting = true;
    return WAITING;
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
    // Types keep `children` out of moveTo; plain JavaScript may not, and a flow must not become one plain job.
    if (nextOptions !== undefined && 'children' in nextOptions) {
      throw new WorkqError(
        'VALIDATION',
        `moveTo makes one job and takes no children: to run children first, return ctx.waitForChildren([...]); to start a flow, enqueue it with sdk.enqueue.${nextName}(payload, { children }).`,
      );
    }
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
