import { z } from 'zod';
import { listSchedules, removeSchedule, upsertSchedule } from '../app/schedules.ts';
import { jobName, storableText, version } from './inputs.ts';
import { adminProcedure } from './scoped.ts';

const scheduleInput = z.object({
  key: storableText(1, 200),
  cron: z.string().min(1).max(200),
  timezone: z.string().min(1).max(100).optional(),
  name: jobName,
  payload: z.unknown().optional(),
  version: version.optional(),
  options: z.record(z.string(), z.unknown()).optional(),
});

export const scheduleProcedures = {
  /**
   * The crontab's entries and the schedules kept in the store, each with its
   * key, source, next occurrence and last run.
   */
  schedules: adminProcedure.query(({ ctx }) => listSchedules(ctx.services)),

  /**
   * Keeps a schedule in the store, or replaces the one with its key: every
   * server's leader enqueues its occurrences, each once. Refused with
   * `VALIDATION` (expression, time zone, options, payload) or `UNKNOWN_JOB`.
   */
  upsertSchedule: adminProcedure.input(scheduleInput).mutation(({ ctx, input }) => upsertSchedule(ctx.services, input)),

  /** Removes a stored schedule; resolves to whether there was one. Crontab entries change only with the crontab. */
  removeSchedule: adminProcedure
    .input(z.object({ key: storableText(1, 200) }))
    .mutation(({ ctx, input }) => removeSchedule(ctx.services, input.key)),
};
