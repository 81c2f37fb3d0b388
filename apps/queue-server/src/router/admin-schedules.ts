import type { JobState } from '@workq/core';
import {
  describeEntry,
  type EnqueueResult,
  fromStoredSchedule,
  parseSchedule,
  runKey,
  type ScheduledEntry,
  type SchedulerDeps,
  toStoredSchedule,
  toStoredValue,
  visibleState,
} from '@workq/core/engine';
import { z } from 'zod';
import { checkPayloads, jobName, storableText, version } from './inputs.ts';
import { enqueueThroughServer } from './producer.ts';
import { adminProcedure } from './scoped.ts';
import type { ServerServices } from './trpc.ts';

/** A schedule as `admin.schedules` lists it. */
export interface ListedSchedule extends ReturnType<typeof describeEntry> {
  /** The last occurrence enqueued: its job, time and the job's state now (`null` once the job was pruned). */
  lastRun: { jobId: string; at: Date; state: JobState | null } | null;
}

const scheduleInput = z.object({
  key: storableText(1, 200),
  cron: z.string().min(1).max(200),
  timezone: z.string().min(1).max(100).optional(),
  name: jobName,
  payload: z.unknown().optional(),
  version: version.optional(),
  options: z.record(z.string(), z.unknown()).optional(),
});

/** The schedules kept in the store, checked as they are read; a row that no longer reads is left out with a warning. */
export async function loadStoredSchedules(services: ServerServices): Promise<ScheduledEntry[]> {
  const loaded: ScheduledEntry[] = [];
  for (const stored of await services.engine.store.listSchedules()) {
    try {
      loaded.push(fromStoredSchedule(stored));
    } catch (error) {
      services.options.logger.warn('a stored schedule cannot be read; it does not run', {
        key: stored.key,
        error: String(error),
      });
    }
  }
  return loaded;
}

/** Enqueues one occurrence as `enqueueThroughServer` does, then records it as its schedule's last run. */
export function enqueueAndRecord(services: ServerServices): SchedulerDeps['enqueue'] {
  const enqueue = enqueueThroughServer(services);
  return async (scheduled, at, idempotencyKey): Promise<EnqueueResult> => {
    const result = await enqueue(scheduled, at, idempotencyKey);
    await services.engine.store.recordScheduleRun({ key: runKey(scheduled), jobId: result.id, at });
    return result;
  };
}

export const scheduleProcedures = {
  /**
   * The crontab's entries and the schedules kept in the store, each with its
   * key, source, next occurrence and last run.
   */
  schedules: adminProcedure.query(async ({ ctx }): Promise<ListedSchedule[]> => {
    const { engine, crontab } = ctx.services;
    const all = [...crontab, ...(await loadStoredSchedules(ctx.services))];
    const runs = new Map((await engine.store.listScheduleRuns(all.map(runKey))).map((run) => [run.key, run]));
    const jobIds = [...runs.values()].map((run) => run.jobId);
    const jobs = jobIds.length === 0 ? [] : await engine.store.listJobs({ ids: jobIds, limit: jobIds.length });
    const now = engine.clock.now();
    const states = new Map(jobs.map((job) => [job.id, visibleState(job, now)]));
    return all.map((scheduled) => {
      const run = runs.get(runKey(scheduled));
      const lastRun = run ? { jobId: run.jobId, at: run.at, state: states.get(run.jobId) ?? null } : null;
      return { ...describeEntry(scheduled, now), lastRun };
    });
  }),

  /**
   * Keeps a schedule in the store, or replaces the one with its key: every
   * server's leader enqueues its occurrences, each once. Refused with
   * `VALIDATION` (expression, time zone, options, payload) or `UNKNOWN_JOB`.
   */
  upsertSchedule: adminProcedure.input(scheduleInput).mutation(async ({ ctx, input }) => {
    const { engine, registry, scheduler } = ctx.services;
    const scheduled = parseSchedule(input, engine.clock.now());
    const payload = input.payload ?? {};
    const jobVersion = input.version ?? (await registry.newestVersion(input.name));
    await checkPayloads(ctx.services, input.name, jobVersion, [payload]);
    const stored = toStoredValue(payload, `Payload of schedule "${input.key}"`);
    await engine.store.upsertSchedule(toStoredSchedule(scheduled, stored));
    ctx.services.bus.announceSchedulesChanged();
    await scheduler.reload();
    return describeEntry(scheduled, engine.clock.now());
  }),

  /** Removes a stored schedule; resolves to whether there was one. Crontab entries change only with the crontab. */
  removeSchedule: adminProcedure.input(z.object({ key: storableText(1, 200) })).mutation(async ({ ctx, input }) => {
    const removed = await ctx.services.engine.store.removeSchedule(input.key);
    ctx.services.bus.announceSchedulesChanged();
    await ctx.services.scheduler.reload();
    return removed;
  }),
};
