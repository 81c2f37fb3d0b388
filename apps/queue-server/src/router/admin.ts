import { JOB_STATES, MAX_BATCH_SIZE } from '@workq/core';
import { z } from 'zod';
import { listJobs } from '../app/jobs.ts';
import { presentWorkers } from '../app/workers.ts';
import { jobListProcedures } from './admin-job-list.ts';
import { jobProcedures } from './admin-jobs.ts';
import { queueProcedures } from './admin-queues.ts';
import { scheduleProcedures } from './admin-schedules.ts';
import { schemaProcedures } from './admin-schemas.ts';
import { workerProcedures } from './admin-workers.ts';
import { jobId, jobName, storableText } from './inputs.ts';
import { adminProcedure } from './scoped.ts';
import { callSignal, router } from './trpc.ts';

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
    .query(({ ctx, input, signal }) => {
      const { name, state, limit, cursor } = input;
      return listJobs(ctx.services, { name, state, limit, cursor }, callSignal(signal));
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

  /**
   * Runs a dead or completed job again in place, keeping its id; `false` when it is waiting or running,
   * `CONFLICT` for a cancelled job or a completed one in a flow (the message says what to do instead).
   */
  retry: adminProcedure.input(z.object({ id: jobId })).mutation(({ ctx, input }) => {
    return ctx.services.engine.retry(input.id);
  }),

  /**
   * Puts a cancelled job that never started back to waiting at its own run time; `false` when it is waiting
   * or running, `CONFLICT` for one cancelled after it started (replay makes a new job), or in a flow.
   */
  restore: adminProcedure.input(z.object({ id: jobId })).mutation(({ ctx, input }) => {
    return ctx.services.engine.restore(input.id);
  }),

  /** Deletes the waiting job of a type that holds an idempotency key, freeing the key; `false` when none waits. */
  removeByKey: adminProcedure
    .input(z.object({ name: jobName, key: storableText(1, 255) }))
    .mutation(({ ctx, input }) => ctx.services.engine.removeByKey(input.name, input.key)),

  prune: adminProcedure.mutation(({ ctx }) => {
    return ctx.services.engine.prune();
  }),
});
