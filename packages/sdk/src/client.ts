import { type Catalog, catalogJsonSchemas, type JobName } from '@workq/core';
import { type AdminApi, createAdminApi } from './admin.ts';
import type { ConsumeOptions, Handler, Worker } from './consumer/types.ts';
import { startWorker } from './consumer/worker.ts';
import { EnqueueBatcher } from './enqueue-batcher.ts';
import {
  createEnqueue,
  createEnqueueMany,
  createHandle,
  definitionOf,
  type EnqueueFns,
  type EnqueueManyFns,
  type JobHandle,
} from './producer.ts';
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
  token?: TokenSource;
  /** A fetch implementation. @defaultValue on Node, a keep-alive `node:http` client; elsewhere `globalThis.fetch` */
  fetch?: typeof fetch;
}

export interface WorkqClient<C extends Catalog> {
  /** `sdk.enqueue.<job>(payload, options)`: one job, typed by the catalog. */
  enqueue: EnqueueFns<C>;
  /** `sdk.enqueueMany.<job>([payload, …], options)`: many jobs in one round trip. */
  enqueueMany: EnqueueManyFns<C>;
  /** Starts a worker for one job type. */
  consume<N extends JobName<C>>(name: N, handler: Handler<C, N>, options?: ConsumeOptions): Worker;
  /** Inspection and dead-letter operations (`admin` scope). */
  admin: AdminApi;
  /** A handle to a job by id. */
  job<N extends JobName<C>>(name: N, id: string): JobHandle;
  /**
   * Registers the catalog's payload schemas with the server now, instead of
   * on the first enqueue or claim, so a service can fail fast at start-up
   * (`UNAVAILABLE`, `FORBIDDEN`, `CONFLICT` for a changed schema under the
   * same version) and its first job costs one round trip. Resolves once
   * registered; later calls resolve at once. After a failure, the next call
   * (or enqueue) tries again.
   */
  ready(): Promise<void>;
  /** Closes every worker this client started. */
  close(): Promise<void>;
}

/** A typed producer and consumer for one catalog, talking tRPC to a queue server. */
export function createClient<const C extends Catalog>(options: ClientOptions<C>): WorkqClient<C> {
  const { jobs } = options;
  const transport = createTransport({ url: options.url, token: options.token, fetch: options.fetch });
  const { call } = transport;
  let registered: Promise<void> | undefined;
  /** Registers this catalog's payload schemas once, before the first call that needs them; retried after a failure. */
  const ready = (): Promise<void> => {
    registered ??= call((api) => api.schemas.register.mutate({ schemas: catalogJsonSchemas(jobs) })).then(
      () => undefined,
      (error: unknown) => {
        registered = undefined;
        throw error;
      },
    );
    return registered;
  };
  const producerDeps = { jobs, call, ready, enqueues: new EnqueueBatcher(call) };
  const workers = new Set<Worker>();
  return {
    enqueue: createEnqueue<C>(producerDeps),
    enqueueMany: createEnqueueMany<C>(producerDeps),
    consume(name, handler, consumeOptions = {}) {
      const worker = startWorker({
        name,
        definition: definitionOf(jobs, name),
        definitionOf: (target) => definitionOf(jobs, target),
        call,
        ready,
        handler: handler as never,
        options: consumeOptions,
      });
      workers.add(worker);
      worker.closed.finally(() => workers.delete(worker));
      return worker;
    },
    admin: createAdminApi(call),
    job: (name, id) => createHandle(producerDeps, name, id, false),
    ready,
    close: async () => {
      await Promise.all([...workers].map((worker) => worker.close()));
    },
  };
}
