import { JOB_STATES, MAX_BATCH_SIZE } from '@workq/core';
import { z } from 'zod';
import { presentWorkers } from '../app/workers.ts';
import { jobListProcedures } from './admin-job-list.ts';
import { jobProcedures } from './admin-jobs.ts';
import { queueProcedures } from './admin-queues.ts';
import { scheduleProcedures } from './admin-schedules.ts';
import { schemaProcedures } from './admin-schemas.ts';
import { workerProcedures } from './admin-workers.ts';
import { jobId, jobName, storableText } from './inputs.ts';
import { adminProcedure } from './scoped.ts';
import { router } from './trpc.ts';

export const adminRouter = router({
  list: adminProcedure
    .input(
      z.object({
        name: jobName.optional(),
        state: z.enum(JOB_STATES).optional(),
        limit: z.number().int().min(1).max(MAX_BATCH_SIZE).optional(),
        cursor: storableText(0, 64).optional(),
      }),
    )
    .query(({ ctx, input }) => {
      const { name, state, limit, cursor } = input;
      return ctx.services.engine.list({ name, state, limit, cursor });
    }),

  /**
   * Counts per job type, version and state, and which versions connected
   * consumers read: what a rolling deploy needs to see.
   */
  stats: adminProcedure.query(async ({ ctx }) => {
    const [counts, consumers] = await Promise.all([ctx.services.engine.counts(), presentWorkers(ctx.services)]);
    return { counts, consumers };
  }),

  ...queueProcedures,
  ...scheduleProcedures,
  ...schemaProcedures,
  ...workerProcedures,

  retryDead: adminProcedure
    .input(z.object({ name: jobName.optional(), ids: z.array(jobId).max(MAX_BATCH_SIZE).optional() }))
    .mutation(({ ctx, input }) => {
      const target = input.ids ? { ids: input.ids } : { name: input.name };
      return ctx.services.engine.retryDead(target);
    }),

  ...jobProcedures,
  ...jobListProcedures,

  replay: adminProcedure.input(z.object({ id: jobId })).mutation(({ ctx, input }) => {
    return ctx.services.engine.replay(input.id);
  }),

  /** Runs a scheduled job now, keeping its id and attempts; `false` when it is not scheduled. */
  promote: adminProcedure.input(z.object({ id: jobId })).mutation(({ ctx, input }) => {
    return ctx.services.engine.promote(input.id);
  }),

  prune: adminProcedure.mutation(({ ctx }) => {
    return ctx.services.engine.prune();
  }),
});
