import type { EnqueueOptions, JobState } from '@workq/core';
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
import { enqueueJob } from './enqueue.ts';
import { checkPayloads } from './payloads.ts';
import type { ServerServices } from './services.ts';

/**
 * Schedules: the crontab's entries and those kept in the store, listed and
 * written by operators (`admin.schedules`, `admin.upsertSchedule`,
 * `admin.removeSchedule`) and run by the cron role, which enqueues each
 * occurrence as a producer's enqueue would be.
 */

/** A schedule as `admin.schedules` lists it. */
export interface ListedSchedule extends ReturnType<typeof describeEntry> {
  /** The last occurrence enqueued: its job, time and the job's state now (`null` once the job was pruned). */
  lastRun: { jobId: string; at: Date; state: JobState | null } | null;
}

/** A schedule as an operator writes it; checked by `parseSchedule`. */
export interface ScheduleInput {
  key: string;
  cron: string;
  timezone?: string | undefined;
  name: string;
  payload?: unknown;
  version?: number | undefined;
  options?: Record<string, unknown> | undefined;
}

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

/**
 * Enqueues one occurrence for the cron role as a producer's enqueue would be (size and schema checked, handed
 * to a waiting consumer, counted), then records it as its schedule's last run.
 */
export function enqueueOccurrence(services: ServerServices): SchedulerDeps['enqueue'] {
  return async (scheduled, at, idempotencyKey): Promise<EnqueueResult> => {
    const { entry } = scheduled;
    const jobVersion = entry.version ?? (await services.registry.newestVersion(entry.name));
    const options: EnqueueOptions = { ...entry.options, runAt: at, idempotencyKey };
    const result = await enqueueJob(services, entry.name, jobVersion, entry.payload ?? {}, options);
    services.metrics.cronEnqueues.inc({ name: entry.name, outcome: result.created ? 'created' : 'existing' });
    await services.engine.store.recordScheduleRun({ key: runKey(scheduled), jobId: result.id, at });
    return result;
  };
}

/** The crontab's entries and the stored schedules, each with its key, source, next occurrence and last run. */
export async function listSchedules(services: ServerServices): Promise<ListedSchedule[]> {
  const { engine, crontab } = services;
  const all = [...crontab, ...(await loadStoredSchedules(services))];
  const runs = new Map((await engine.store.listScheduleRuns(all.map(runKey))).map((run) => [run.key, run]));
  const jobIds = [...runs.values()].map((run) => run.jobId);
  const jobs =
    jobIds.length === 0 ? [] : await engine.store.listJobs({ ids: jobIds, limit: jobIds.length, withoutValues: true });
  const now = engine.clock.now();
  const states = new Map(jobs.map((job) => [job.id, visibleState(job, now)]));
  return all.map((scheduled) => {
    const run = runs.get(runKey(scheduled));
    const lastRun = run ? { jobId: run.jobId, at: run.at, state: states.get(run.jobId) ?? null } : null;
    return { ...describeEntry(scheduled, now), lastRun };
  });
}

/**
 * Keeps a schedule in the store, or replaces the one with its key, and tells every server's leader to read the
 * schedules again. `VALIDATION` (expression, time zone, options, payload) or `UNKNOWN_JOB`.
 */
export async function upsertSchedule(services: ServerServices, input: ScheduleInput) {
  const { engine, registry, scheduler } = services;
  const scheduled = parseSchedule(input, engine.clock.now());
  const payload = input.payload ?? {};
  const jobVersion = input.version ?? (await registry.newestVersion(input.name));
  await checkPayloads(services, input.name, jobVersion, [payload]);
  const stored = toStoredValue(payload, `Payload of schedule "${input.key}"`);
  await engine.store.upsertSchedule(toStoredSchedule(scheduled, stored));
  services.bus.announceSchedulesChanged();
  await scheduler.reload();
  return describeEntry(scheduled, engine.clock.now());
}

/** Removes a stored schedule, and tells every server's leader; resolves to whether there was one. */
export async function removeSchedule(services: ServerServices, key: string): Promise<boolean> {
  const removed = await services.engine.store.removeSchedule(key);
  services.bus.announceSchedulesChanged();
  await services.scheduler.reload();
  return removed;
}
