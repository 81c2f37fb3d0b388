import { isFinishedState, type JobStatus, WorkqError } from '@workq/core';
import type { EnqueueInput, EnqueueResult, SchedulerDeps } from '@workq/core/engine';
import { z } from 'zod';
import {
  checkBatchSize,
  checkPayloads,
  type EnqueueOptionsInput,
  enqueueOptions,
  jobId,
  jobName,
  toEnqueueInputs,
  version,
} from './inputs.ts';
import { readsJob, scoped } from './scoped.ts';
import { authedProcedure, router, type ServerServices } from './trpc.ts';

/** What an `enqueueMany` may give each job of its own, by index, over the options of the whole batch. */
export interface PerJobInputs {
  /** Each job's own options (`null`: none), over the batch's. */
  options?: readonly (NonNullable<EnqueueOptionsInput> | null)[] | undefined;
  /** Each job's own idempotency key (`null`: none), over any in its options. */
  idempotencyKeys?: readonly (string | null)[] | undefined;
}

/**
 * Validates size and schema of each payload, then enqueues them in one store round trip, each with the
 * batch's options, or its own from `perJob`.
 */
export async function enqueueValidated(
  services: ServerServices,
  name: string,
  jobVersion: number,
  payloads: readonly unknown[],
  options: EnqueueOptionsInput,
  perJob?: PerJobInputs,
): Promise<EnqueueResult[]> {
  const { limits } = services.options;
  checkBatchSize(payloads.length, limits.maxBatchSize, 'enqueueMany');
  checkPerJobLength(payloads.length, perJob?.options, 'perJob');
  checkPerJobLength(payloads.length, perJob?.idempotencyKeys, 'idempotencyKeys');
  await checkPayloads(services, name, jobVersion, payloads);
  const inputs = withPerJob(toEnqueueInputs(name, jobVersion, payloads, options), options, perJob);
  const results = await services.dispatcher.enqueue(inputs);
  services.metrics.enqueued.inc({ name }, results.filter((r) => r.created).length);
  return results;
}

function checkPerJobLength(jobs: number, items: readonly unknown[] | undefined, field: string): void {
  if (items !== undefined && items.length !== jobs) {
    throw new WorkqError(
      'VALIDATION',
      `${field} has ${items.length} items for ${jobs} payloads; give one per payload.`,
    );
  }
}

/**
 * Gives the jobs of a batch their own options and keys (both parsed by the router's schema, so they hold only
 * known fields). A job with only a key of its own keeps the batch's options object, so the engine still
 * resolves it once for the whole batch.
 */
function withPerJob(
  inputs: EnqueueInput[],
  shared: EnqueueOptionsInput,
  perJob: PerJobInputs | undefined,
): EnqueueInput[] {
  if (!perJob) return inputs;
  const { options, idempotencyKeys } = perJob;
  for (const [i, input] of inputs.entries()) {
    const own = options?.[i];
    if (own) input.options = { ...shared, ...own };
    const key = idempotencyKeys?.[i];
    if (key) input.idempotencyKey = key;
  }
  return inputs;
}

export const producerRouter = router({
  enqueue: authedProcedure
    .input(z.object({ name: jobName, version, payload: z.unknown(), options: enqueueOptions }))
    .use(scoped('produce', (input) => input.name))
    .mutation(async ({ ctx, input }) => {
      const [result] = await enqueueValidated(ctx.services, input.name, input.version, [input.payload], input.options);
      return result as EnqueueResult;
    }),

  enqueueMany: authedProcedure
    .input(
      z.object({
        name: jobName,
        version,
        payloads: z.array(z.unknown()).min(1),
        /** Applied to every job of the batch (a key here is one key for the whole batch: one job). */
        options: enqueueOptions,
        /** Each job's own options, by index, over `options`; `null` for none. */
        perJob: z.array(enqueueOptions.unwrap().nullable()).optional(),
        /** Each job's own idempotency key, by index, over any in its options; `null` for none. */
        idempotencyKeys: z.array(enqueueOptions.unwrap().shape.idempotencyKey.unwrap().nullable()).optional(),
      }),
    )
    .use(scoped('produce', (input) => input.name))
    .mutation(async ({ ctx, input }) => {
      const { name, payloads, perJob, idempotencyKeys } = input;
      const each = perJob || idempotencyKeys ? { options: perJob, idempotencyKeys } : undefined;
      return enqueueValidated(ctx.services, name, input.version, payloads, input.options, each);
    }),

  /** A job's status, for a token that may produce or consume its type. */
  get: authedProcedure
    .input(z.object({ id: jobId }))
    .use(readsJob)
    .query(({ ctx }) => ctx.job),

  cancel: authedProcedure
    .input(z.object({ id: jobId }))
    .use(readsJob)
    .use(scoped('produce', (_input, ctx) => ctx.job.name))
    .mutation(({ ctx, input }) => ctx.services.engine.cancel(input.id)),

  /**
   * Long-polls until the job finishes or `timeoutMs` passes; resolves to its status either way. A job still
   * unfinished when the time is up also says how many workers seen within the presence window read its type
   * and version (`workersReading`), so a caller that waited in vain can tell that none is running.
   */
  wait: authedProcedure
    .input(z.object({ id: jobId, timeoutMs: z.number().int().min(0) }))
    .use(readsJob)
    .query(async ({ ctx, input, signal }): Promise<JobStatus & { workersReading?: number }> => {
      const { bus, engine, options } = ctx.services;
      const deadline = Date.now() + Math.min(input.timeoutMs, options.limits.maxLongPollMs);
      const aborted = signal ?? new AbortController().signal;
      for (let status = ctx.job; ; status = await engine.get(input.id)) {
        const remainingMs = deadline - Date.now();
        if (isFinishedState(status.state) || aborted.aborted || bus.isClosed) return status;
        if (remainingMs <= 0) return { ...status, workersReading: await workersReading(ctx.services, status) };
        await bus.waitForFinish(input.id, Math.min(remainingMs, options.pollIntervalMs), aborted);
      }
    }),
});

/** How many workers seen within the presence window read jobs of `job`'s type and version. */
async function workersReading(services: ServerServices, job: Pick<JobStatus, 'name' | 'version'>): Promise<number> {
  const since = new Date(services.engine.clock.now().getTime() - services.options.presenceWindowMs);
  const present = await services.engine.store.listWorkers(since);
  return present.filter(
    (worker) => worker.name === job.name && worker.minVersion <= job.version && job.version <= worker.maxVersion,
  ).length;
}

/** Enqueues crontab occurrences as a producer's enqueue would be: size and schema checked, handed to a waiting consumer. */
export function enqueueThroughServer(services: ServerServices): SchedulerDeps['enqueue'] {
  return async ({ entry }, at, idempotencyKey) => {
    const jobVersion = entry.version ?? (await services.registry.newestVersion(entry.name));
    const options = { ...entry.options, runAt: at, idempotencyKey };
    const [result] = (await enqueueValidated(services, entry.name, jobVersion, [entry.payload ?? {}], options)) as [
      EnqueueResult,
    ];
    services.metrics.cronEnqueues.inc({ name: entry.name, outcome: result.created ? 'created' : 'existing' });
    return result;
  };
}
