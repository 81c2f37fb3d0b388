import { WorkqError } from '@workq/core';
import type { EnqueueInput, EnqueueResult } from '@workq/core/engine';
import { z } from 'zod';
import { hasScope, type Principal, requireScope } from '../auth.ts';
import { checkBatchSize, checkPayloads, enqueueOptions, jobId, jobName, toEnqueueInputs, version } from './inputs.ts';
import { authedProcedure, router, type ServerServices } from './trpc.ts';

const FINISHED = new Set(['completed', 'dead', 'cancelled']);

/** Validates size and schema of each payload, then enqueues them, with the same options, in one store round trip. */
export async function enqueueValidated(
  services: ServerServices,
  name: string,
  jobVersion: number,
  payloads: readonly unknown[],
  options: z.infer<typeof enqueueOptions>,
): Promise<EnqueueResult[]> {
  const { limits } = services.options;
  checkBatchSize(payloads.length, limits.maxBatchSize, 'enqueueMany');
  await checkPayloads(services, name, jobVersion, payloads);
  const inputs = toEnqueueInputs(name, jobVersion, payloads, options);
  // A lone job goes straight to a consumer waiting on this server, if one is; batches share inserts instead.
  const handed = inputs.length === 1 ? await services.handoffs.enqueue(inputs[0] as EnqueueInput) : undefined;
  const results = handed ? [handed] : await services.enqueues.submit(inputs);
  services.metrics.enqueued.inc({ name }, results.filter((r) => r.created).length);
  return results;
}

/** A job's status, visible to tokens that may produce or consume its type. */
async function readableStatus(services: ServerServices, principal: Principal, id: string) {
  const status = await services.engine.get(id);
  if (!hasScope(principal, 'produce', status.name) && !hasScope(principal, 'consume', status.name)) {
    throw new WorkqError('FORBIDDEN', `This token may not read jobs of type "${status.name}".`);
  }
  return status;
}

export const producerRouter = router({
  enqueue: authedProcedure
    .input(z.object({ name: jobName, version, payload: z.unknown(), options: enqueueOptions }))
    .mutation(async ({ ctx, input }) => {
      requireScope(ctx.principal, 'produce', input.name);
      const [result] = await enqueueValidated(ctx.services, input.name, input.version, [input.payload], input.options);
      return result as EnqueueResult;
    }),

  enqueueMany: authedProcedure
    .input(
      z.object({
        name: jobName,
        version,
        payloads: z.array(z.unknown()).min(1),
        /** Applied to every job of the batch. */
        options: enqueueOptions,
      }),
    )
    .mutation(async ({ ctx, input }) => {
      requireScope(ctx.principal, 'produce', input.name);
      return enqueueValidated(ctx.services, input.name, input.version, input.payloads, input.options);
    }),

  get: authedProcedure
    .input(z.object({ id: jobId }))
    .query(({ ctx, input }) => readableStatus(ctx.services, ctx.principal, input.id)),

  cancel: authedProcedure.input(z.object({ id: jobId })).mutation(async ({ ctx, input }) => {
    const status = await readableStatus(ctx.services, ctx.principal, input.id);
    requireScope(ctx.principal, 'produce', status.name);
    return ctx.services.engine.cancel(input.id);
  }),

  /** Long-polls until the job finishes or `timeoutMs` passes; resolves to its status either way. */
  wait: authedProcedure
    .input(z.object({ id: jobId, timeoutMs: z.number().int().min(0) }))
    .query(async ({ ctx, input, signal }) => {
      const { wakeups, options } = ctx.services;
      const deadline = Date.now() + Math.min(input.timeoutMs, options.limits.maxLongPollMs);
      const aborted = signal ?? new AbortController().signal;
      for (;;) {
        const status = await readableStatus(ctx.services, ctx.principal, input.id);
        const remainingMs = deadline - Date.now();
        if (FINISHED.has(status.state) || remainingMs <= 0 || aborted.aborted || wakeups.isClosed) return status;
        await wakeups.waitForFinish(input.id, Math.min(remainingMs, options.pollIntervalMs), aborted);
      }
    }),
});
