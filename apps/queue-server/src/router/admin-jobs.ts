import { isWorkqError, type JobStatus, WorkqError } from '@workq/core';
import { fromStoredValue, toJobStatus } from '@workq/core/engine';
import { z } from 'zod';
import { checkPayloads, jobId, jobName, version } from './inputs.ts';
import { adminProcedure } from './scoped.ts';

/** What `admin.checkPayload` answers: valid, or the server's message and the issues by field path. */
export type PayloadCheck = { valid: true } | { valid: false; message: string; issues: PayloadIssue[] };

/** One way a payload is invalid: where in it (property names and indexes), and what is wrong. */
export interface PayloadIssue {
  path: string[];
  message: string;
}

/** One job as an operator inspects it (`admin.job`): its status, its payload and who holds its lease. */
export interface InspectedJob extends JobStatus {
  payload: unknown;
  /** The worker (`admin.workers` id) holding the job's lease, or that last held it; `null` when none did. */
  workerId: string | null;
}

export const jobProcedures = {
  /** One job with what `jobs.get` leaves out: the payload and the lease holder. `NOT_FOUND` once pruned. */
  job: adminProcedure.input(z.object({ id: jobId })).query(async ({ ctx, input }): Promise<InspectedJob> => {
    const { engine } = ctx.services;
    const job = await engine.store.getJob(input.id);
    if (!job) throw new WorkqError('NOT_FOUND', `No job with id ${input.id} (it may have been pruned from history).`);
    return {
      ...toJobStatus(job, engine.clock.now(), { errors: true }),
      payload: fromStoredValue(job.payload),
      workerId: job.workerId,
    };
  }),

  /**
   * Checks a payload against the registered schema of (name, version) as an
   * enqueue would, and stores nothing: a form can show the issues beside its
   * fields before it enqueues. An invalid payload is an answer, not an error;
   * an unknown job or version is refused as an enqueue would be. A mutation,
   * since a payload may be too large for a query's URL.
   */
  checkPayload: adminProcedure
    .input(z.object({ name: jobName, version, payload: z.unknown() }))
    .mutation(async ({ ctx, input }): Promise<PayloadCheck> => {
      try {
        await checkPayloads(ctx.services, input.name, input.version, [input.payload]);
        return { valid: true };
      } catch (error) {
        if (!isWorkqError(error, 'VALIDATION')) throw error;
        const issues = Array.isArray(error.details) ? (error.details as PayloadIssue[]) : [];
        return { valid: false, message: error.message, issues };
      }
    }),
};
