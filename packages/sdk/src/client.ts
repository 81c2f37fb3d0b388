import { type Catalog, catalogJsonSchemas, type JobName, WorkqError } from '@workq/core';
import { type AdminApi, createAdminApi } from './admin.ts';
import type { ConsumeOptions, Handler, Worker } from './consumer/types.ts';
import { startWorker } from './consumer/worker.ts';
import { EnqueueBatcher } from './enqueue-batcher.ts';
import { createEvents, type EventsFn } from './events.ts';
import { type ChildFns, createChildFns } from './flows.ts';
import { consoleLogger, type Logger, silentLogger } from './logger.ts';
import {
  createEnqueue,
  createEnqueueMany,
  createHandle,
  definitionOf,
  type EnqueueFns,
  type EnqueueManyFns,
  type JobHandle,
} from './producer.ts';
import { TracingLoader, type TracingOptions } from './tracing.ts';
import { createTransport, type TokenSource } from './transport.ts';

export interface ClientOptions<C extends Catalog> {
  /** The queue server's base URL, e.g. `http://127.0.0.1:4000`. */
  url: string;
  /** The shared job catalog (`defineCatalog`). */
  jobs: C;
  /**
   * Bearer token: a string, or a function returning one (or a promise of one),
   * called for every request, so a browser page can refresh a short-lived
   * token (see the server's `mintToken`). When the function throws or
   * rejects, that request fails with `UNAUTHORIZED`, nothing sent.
   * @defaultValue none (for a server running open on loopback)
   */
  token?: TokenSource | undefined;
  /** A fetch implementation. @defaultValue on Node, a keep-alive `node:http` client; elsewhere `globalThis.fetch` */
  fetch?: typeof fetch | undefined;
  /**
   * How long a request may go unanswered before it fails with `TIMEOUT` (retryable). A request the server
   * holds on purpose gets that wait on top: a worker's claim its `pollWaitMs`, `handle.result()` its wait.
   * A timed-out write may have taken effect on the server all the same.
   * @defaultValue 30_000
   */
  timeoutMs?: number | undefined;
  /**
   * How many times an `enqueue` or `enqueueMany` that failed with `UNAVAILABLE` or `TIMEOUT` is sent again,
   * after 250 ms, 500 ms, 1 s, … (doubling up to 4 s, with jitter), within `enqueueBudgetMs`. Each job is sent
   * under an id — the caller's (`id`), or a UUIDv7 the SDK makes for it — so a retry after a lost answer
   * returns the job stored the first time instead of making a second one, and stores no key. A flow is sent
   * under its parent's id, and a retry returns the parent stored the first time, its children stored once. `0`
   * sends each enqueue once.
   * @defaultValue 3
   */
  enqueueRetries?: number | undefined;
  /**
   * The time an enqueue may take, retries included: no attempt starts, nor runs, past it.
   * @defaultValue 60_000
   */
  enqueueBudgetMs?: number | undefined;
  /**
   * OpenTelemetry spans: a `create` span around each enqueue, whose context is stored with the job, and a
   * `process` span around each handler, linked to it (docs/observability.md). `false` turns them off.
   * @defaultValue on where `@opentelemetry/api` can be imported (an optional peer dependency); spans are
   * recorded only once an OpenTelemetry SDK is registered
   */
  tracing?: false | TracingOptions | undefined;
  /**
   * Where the client's workers say what happens to them (connection trouble once per outage, each failed
   * attempt, why a worker stopped); a worker's own `logger` option overrides it. `false`: nothing.
   * @defaultValue the platform console, with levels
   */
  logger?: Logger | false | undefined;
}

/** Each `ClientOptions` default, in one place. */
const CLIENT_DEFAULTS = { timeoutMs: 30_000, enqueueRetries: 3, enqueueBudgetMs: 60_000 } as const;

function positiveInteger(value: number, what: string, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new WorkqError('VALIDATION', `${what} must be an integer of at least ${min}; got ${String(value)}.`);
  }
  return value;
}

export interface WorkqClient<C extends Catalog> {
  /** `sdk.enqueue.<job>(payload, options)`: one job, typed by the catalog. */
  enqueue: EnqueueFns<C>;
  /**
   * `sdk.enqueueMany.<job>([payload, …], options)`: many jobs in one round trip, each with the shared options,
   * over which `options.perJob[i]` gives job `i` its own (an idempotency key per job, a priority, a delay…).
   */
  enqueueMany: EnqueueManyFns<C>;
  /**
   * `sdk.child.<job>(payload, { onFailure, …options })`: a child for a parent's `children` (an enqueue's, or
   * `ctx.waitForChildren`'s), typed and checked as `sdk.enqueue.<job>` is. See docs/flows.md.
   */
  child: ChildFns<C>;
  /** Starts a worker for one job type. */
  consume<N extends JobName<C>>(name: N, handler: Handler<C, N>, options?: ConsumeOptions): Worker;
  /** Inspection and dead-letter operations (`admin` scope). */
  admin: AdminApi;
  /**
   * Live job events of one job type, or of every type in the catalog the token may produce, consume or
   * administer: `for await (const event of sdk.events('imageConvert', { signal }))`. See docs/events.md for
   * what a subscriber that falls behind or reconnects receives.
   */
  events: EventsFn<C>;
  /** A handle to a job by id. */
  job<N extends JobName<C>>(name: N, id: string): JobHandle;
  /**
   * Registers the catalog's payload schemas with the server now, instead of
   * on the first enqueue or claim, so a service can fail fast at start-up
   * (`UNAVAILABLE`, `FORBIDDEN`, `CONFLICT` for a changed schema under the
   * same version) and its first job costs one round trip. Resolves once
   * registered; later calls resolve at once. After a failure, the next call
   * (or enqueue) tries again.
   *
   * A version the server does not know yet takes a token with
   * `register:<job>` (or `register:*`, or `admin`): the services that deploy
   * the catalog hold it. With a token that may only produce or consume (a
   * browser's), `ready()` succeeds once the catalog is registered, and before
   * that rejects with `FORBIDDEN`, naming the versions not yet registered
   * (`details.unregistered`) and how to register them.
   */
  ready(): Promise<void>;
  /** Closes every worker this client started. */
  close(): Promise<void>;
}

/** A typed producer and consumer for one catalog, talking tRPC to a queue server. */
export function createClient<const C extends Catalog>(options: ClientOptions<C>): WorkqClient<C> {
  const { jobs } = options;
  const timeoutMs = positiveInteger(options.timeoutMs ?? CLIENT_DEFAULTS.timeoutMs, 'timeoutMs', 1);
  const retry = {
    retries: positiveInteger(options.enqueueRetries ?? CLIENT_DEFAULTS.enqueueRetries, 'enqueueRetries', 0),
    budgetMs: positiveInteger(options.enqueueBudgetMs ?? CLIENT_DEFAULTS.enqueueBudgetMs, 'enqueueBudgetMs', 1),
  };
  const transport = createTransport({ url: options.url, token: options.token, fetch: options.fetch, timeoutMs });
  const { call } = transport;
  let registered: Promise<void> | undefined;
  /** Registers this catalog's payload schemas once, before the first call that needs them; retried after a failure. */
  const ready = (): Promise<void> => {
    registered ??= call((api, signal) =>
      api.schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) }, { signal }),
    ).then(
      () => undefined,
      (error: unknown) => {
        registered = undefined;
        throw catalogNotKnown(error) ?? error;
      },
    );
    return registered;
  };
  const tracing = new TracingLoader(options.tracing);
  const producerDeps = { jobs, call, ready, enqueues: new EnqueueBatcher(call), retry, tracing };
  const workers = new Set<Worker>();
  return {
    enqueue: createEnqueue<C>(producerDeps),
    enqueueMany: createEnqueueMany<C>(producerDeps),
    child: createChildFns<C>((name) => definitionOf(jobs, name)),
    consume(name, handler, consumeOptions = {}) {
      const worker = startWorker({
        name,
        definition: definitionOf(jobs, name),
        definitionOf: (target) => definitionOf(jobs, target),
        call,
        ready,
        tracing,
        handler: handler as never,
        options: consumeOptions,
        url: options.url,
        logger: options.logger === false ? silentLogger : (options.logger ?? consoleLogger),
        tokenRefreshes: typeof options.token === 'function',
      });
      workers.add(worker);
      // Forgotten however it ends: `closed` rejects for a worker that stopped on its own.
      const forget = () => workers.delete(worker);
      worker.closed.then(forget, forget);
      return worker;
    },
    admin: createAdminApi(transport),
    events: createEvents(jobs, transport.api),
    job: (name, id) => createHandle(producerDeps, name, id, false),
    ready,
    close: async () => {
      await Promise.all([...workers].map((worker) => worker.close()));
    },
  };
}

/**
 * The server's refusal to register versions it does not know, for a token
 * that may not register them, said as what it means to this client: its
 * catalog is not known yet, and this token cannot make it known. Other
 * errors: `undefined`.
 */
function catalogNotKnown(error: unknown): WorkqError | undefined {
  if (!(error instanceof WorkqError) || error.code !== 'FORBIDDEN') return undefined;
  const unregistered = (error.details as { unregistered?: unknown } | undefined)?.unregistered;
  if (!Array.isArray(unregistered) || unregistered.length === 0) return undefined;
  return new WorkqError(
    'FORBIDDEN',
    `The queue server does not know this client's catalog yet, and this client's token cannot register it: ${error.message}`,
    { details: error.details, cause: error },
  );
}
