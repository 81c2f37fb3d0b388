import { FLOW_LIMITS } from '@workq/core';
import { z } from 'zod';
import { childrenPage } from '../app/children-pages.ts';
import { enqueueJobs } from '../app/enqueue.ts';
import { childTypes, enqueueJobOrFlow } from '../app/flows.ts';
import { readStatus, waitForJob } from '../app/jobs.ts';
import { requireReadScope } from '../auth.ts';
import { childJob, enqueueOptions, jobId, jobName, perJobIds, version } from './inputs.ts';
import { producesEach, readsJob, scoped } from './scoped.ts';
import { authedProcedure, callSignal, router } from './trpc.ts';

export const producerRouter = router({
  /**
   * Enqueues one job; with `children`, a flow: the job and every child at every depth, all or nothing, the job
   * waiting for its children (docs/flows.md). Each child's type needs the caller's `produce:` scope too.
   */
  enqueue: authedProcedure
    .input(
      z.object({
        name: jobName,
        version,
        payload: z.unknown(),
        options: enqueueOptions,
        children: z.array(childJob).optional(),
      }),
    )
    .use(scoped('produce', (input) => input.name))
    .use(producesEach((input) => childTypes(input.children)))
    .mutation(({ ctx, input }) =>
      enqueueJobOrFlow(ctx.services, input.name, input.version, input.payload, input.options, input.children),
    ),

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
        /** Each job's own id, by index, over any in its options; `null` for none (the SDK sends one per job). */
        ids: perJobIds.optional(),
      }),
    )
    .use(scoped('produce', (input) => input.name))
    .mutation(async ({ ctx, input }) => {
      const { name, payloads, perJob, idempotencyKeys, ids } = input;
      const each = perJob || idempotencyKeys || ids ? { options: perJob, idempotencyKeys, ids } : undefined;
      return enqueueJobs(ctx.services, name, input.version, payloads, input.options, each);
    }),

  /** A job's status, for a token that may produce or consume its type; read with room in the answer budget. */
  get: authedProcedure.input(z.object({ id: jobId })).query(async ({ ctx, input, signal }) => {
    const job = await readStatus(ctx.services, input.id, callSignal(signal));
    requireReadScope(ctx.principal, job.name);
    return job;
  }),

  /**
   * A page of a job's children, in enqueue order, after `afterId` when given, for a token that may produce or
   * consume its type: each with its state, and its result or last error. A page also ends at the child whose
   * stored payload, result and errors bring it to `limits.maxChildrenPageBytes`, so a short page does not say
   * that no children follow: the page after the last child is empty.
   */
  children: authedProcedure
    .input(
      z.object({
        id: jobId,
        afterId: jobId.optional(),
        limit: z.number().int().min(1).max(FLOW_LIMITS.statusChildren).default(FLOW_LIMITS.statusChildren),
      }),
    )
    .use(readsJob)
    .query(({ ctx, input, signal }) => {
      const place = { limit: input.limit, ...(input.afterId ? { afterId: input.afterId } : {}) };
      return childrenPage(ctx.services, input.id, place, callSignal(signal));
    }),

  cancel: authedProcedure
    .input(z.object({ id: jobId }))
    .use(readsJob)
    .use(scoped('produce', (_input, ctx) => ctx.jobName))
    .mutation(({ ctx, input }) => ctx.services.engine.cancel(input.id)),

  /**
   * Long-polls until the job finishes or `timeoutMs` passes; resolves to its status either way. A job still
   * unfinished when the time is up also says how many workers seen within the presence window read its type
   * and version (`workersReading`), so a caller that waited in vain can tell that none is running.
   */
  wait: authedProcedure
    .input(z.object({ id: jobId, timeoutMs: z.number().int().min(0) }))
    .query(({ ctx, input, signal }) => waitForJob(ctx.services, ctx.principal, input, callSignal(signal))),
});
