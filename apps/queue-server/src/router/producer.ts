import { isFinishedState, type JobStatus } from '@workq/core';
import { z } from 'zod';
import { enqueueJob, enqueueJobs } from '../app/enqueue.ts';
import { workersReading } from '../app/workers.ts';
import { enqueueOptions, jobId, jobName, version } from './inputs.ts';
import { readsJob, scoped } from './scoped.ts';
import { authedProcedure, router } from './trpc.ts';

export const producerRouter = router({
  enqueue: authedProcedure
    .input(z.object({ name: jobName, version, payload: z.unknown(), options: enqueueOptions }))
    .use(scoped('produce', (input) => input.name))
    .mutation(({ ctx, input }) => enqueueJob(ctx.services, input.name, input.version, input.payload, input.options)),

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
      return enqueueJobs(ctx.services, name, input.version, payloads, input.options, each);
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
