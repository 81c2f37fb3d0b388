import type { QueueInfo } from '@workq/core/engine';
import { z } from 'zod';
import { jobName } from './inputs.ts';
import { adminProcedure } from './scoped.ts';

const positive = z.number().int().min(1).max(1_000_000_000);

/** A `setLimits` change: a limit left out stays as it is, `null` clears it. */
const limitsInput = z
  .object({
    concurrency: positive.nullable().optional(),
    rateLimit: z.object({ max: positive, perMs: positive }).strict().nullable().optional(),
    groupConcurrency: positive.nullable().optional(),
    groupOrder: z.literal('strict').nullable().optional(),
  })
  .strict();

/** Flow control: pause, resume and limits per job type, kept in the store for every server; and the queues. */
export const queueProcedures = {
  pause: adminProcedure.input(z.object({ name: jobName })).mutation(async ({ ctx, input }) => {
    await ctx.services.engine.pause(input.name);
  }),

  /** Ends a pause and lifts a hold (`ctx.rateLimited`) in one write: an operator who resumes means "claims run now". */
  resume: adminProcedure.input(z.object({ name: jobName })).mutation(async ({ ctx, input }) => {
    await ctx.services.engine.resume(input.name);
  }),

  setLimits: adminProcedure.input(z.object({ name: jobName, limits: limitsInput })).mutation(({ ctx, input }) => {
    return ctx.services.engine.setLimits(input.name, input.limits);
  }),

  /** Per job type with jobs or settings: paused or not, `heldUntil` while a hold runs, its limits, and its job counts by state and version. */
  queues: adminProcedure.query(({ ctx }): Promise<QueueInfo[]> => {
    return ctx.services.engine.queues();
  }),
};
