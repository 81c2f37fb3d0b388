import { z } from 'zod';
import { checkPayload, inspectJob } from '../app/jobs.ts';
import { jobId, jobName, version } from './inputs.ts';
import { adminProcedure } from './scoped.ts';

export const jobProcedures = {
  /** One job with what `jobs.get` leaves out: the payload and the lease holder. `NOT_FOUND` once pruned. */
  job: adminProcedure.input(z.object({ id: jobId })).query(({ ctx, input }) => inspectJob(ctx.services, input.id)),

  /**
   * Checks a payload against the registered schema of (name, version) as an
   * enqueue would, and stores nothing: a form can show the issues beside its
   * fields before it enqueues. An invalid payload is an answer, not an error;
   * an unknown job or version is refused as an enqueue would be. A mutation,
   * since a payload may be too large for a query's URL.
   */
  checkPayload: adminProcedure
    .input(z.object({ name: jobName, version, payload: z.unknown() }))
    .mutation(({ ctx, input }) => checkPayload(ctx.services, input.name, input.version, input.payload)),
};
