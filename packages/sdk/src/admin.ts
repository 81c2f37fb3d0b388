import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { JobEvent, ResyncEvent } from '@workq/core';
import type { CronEntry } from '@workq/core/engine';
import type { AppRouter } from '@workq/queue-server/router';
import { watchEventsOnce } from './admin-events.ts';
import { oneByOne } from './one-by-one.ts';
import type { Call, QueueApi } from './transport.ts';

// Every admin type is the router's, inferred: the server declares each input and answer once.
type Outputs = inferRouterOutputs<AppRouter>;
type AdminOutputs = Outputs['admin'];
type AdminInputs = inferRouterInputs<AppRouter>['admin'];

/** Operations that need the `admin` scope. */
export interface AdminApi {
  /** Counts by job type, version and state, and the consumers seen in the last minute with the versions they read. */
  stats(): Promise<AdminOutputs['stats']>;
  /** A page of jobs, by type and state; pass `nextCursor` back for the next page. */
  list(query?: AdminInputs['list']): Promise<AdminOutputs['list']>;
  /** One job as an operator inspects it: its status, its payload and the worker holding (or last holding) it. */
  job(id: string): Promise<InspectedJob>;
  /** Cancels a scheduled, ready or active job; resolves to `false` when it had ended already. */
  cancel(id: string): Promise<Outputs['jobs']['cancel']>;
  /** The registered payload schema versions (of one job type), with their fingerprints and when registered. */
  schemas(name?: string): Promise<RegisteredSchema[]>;
  /**
   * Live job events of one job type, or of every type, read without a catalog (a result as sent) over one
   * stream that is not resumed: the iteration returns when `signal` aborts, and fails with the server's code
   * when the stream is refused or ends (`UNAVAILABLE` as the server shuts down). `sdk.events` is the typed,
   * resuming one.
   */
  events(name?: string, options?: { signal?: AbortSignal | undefined }): AsyncIterable<JobEvent | ResyncEvent>;
  /**
   * The recurring jobs: the server's crontab entries and the schedules kept in the store, each with its key,
   * source, next occurrence (`null`: none) and last run (the job it enqueued, when, and that job's state now).
   */
  schedules(): Promise<ScheduleListing[]>;
  /**
   * Keeps a recurring job in the store, or replaces the one with its `key`: every server's leader enqueues each
   * occurrence once. `payload` is checked against the job's schema (`version`, or the newest registered).
   * Rejects with `VALIDATION` (expression, time zone, options, payload) or `UNKNOWN_JOB`.
   */
  upsertSchedule(schedule: ScheduleInput): Promise<AdminOutputs['upsertSchedule']>;
  /** Removes a stored schedule; resolves to whether there was one. */
  removeSchedule(key: string): Promise<AdminOutputs['removeSchedule']>;
  /**
   * Removes the registered payload schema of one job version, on every
   * server; resolves to whether one was registered. The version is then free
   * to register again (by a token with `register:<job>`), and payloads of it
   * are refused until it is. Jobs of that version already waiting stay: a
   * consumer that declares the version still runs them, checked against its
   * own schema. See docs/operations.md.
   */
  removeSchema(name: string, version: number): Promise<AdminOutputs['removeSchema']>;
  /**
   * The worker registry: each consumer seen recently (claiming, or extending the leases of jobs it runs), with
   * its host, process id, job types and versions, start time, last seen time and the jobs it holds.
   */
  workers(): Promise<WorkerListing[]>;
  /**
   * Pauses a job type on every server: claims lease none of its jobs until `resume`, and the consumers'
   * waiting claims stay parked; its jobs keep arriving. Kept in the store.
   */
  pause(name: string): Promise<AdminOutputs['pause']>;
  /** Ends a `pause` and lifts a hold (`ctx.rateLimited`), in one write: claims of the type lease again at once. */
  resume(name: string): Promise<AdminOutputs['resume']>;
  /**
   * Changes a job type's limits, kept in the store and honoured by every server's claims: a limit left out
   * stays as it is, `null` clears it. Resolves to the limits now set. See docs/flow-control.md.
   */
  setLimits(name: string, limits: LimitsChange): Promise<QueueLimits>;
  /**
   * Per job type (with jobs or settings): paused or not, `heldUntil` while a hold runs, its limits, and its job
   * counts by state and version.
   */
  queues(): Promise<QueueListing[]>;
  /** Makes dead jobs (by ids, or all of one type) ready again with fresh attempts. Resolves to how many. */
  retryDead(target: { name: string } | { ids: string[] }): Promise<AdminOutputs['retryDead']>;
  /** Enqueues a finished job again as a new job; resolves to that job's id and state. */
  replay(id: string): Promise<AdminOutputs['replay']>;
  /**
   * Runs a scheduled job now (a delayed one, or one waiting out a retry's backoff), keeping its id and
   * attempts; resolves to `false` when it is not scheduled. `NOT_FOUND` for no such job.
   */
  promote(id: string): Promise<AdminOutputs['promote']>;
  /**
   * Runs a finished job again in place, keeping its id (BullMQ's `job.retry`): a dead job as `retryDead` does,
   * or a completed job outside flows, its result and error cleared; either is ready at once with fresh
   * attempts. Resolves to `false` when the job is waiting or running; `CONFLICT` for a cancelled job (see
   * `restore`) or a completed one in a flow (see `replay`); `NOT_FOUND` for no such job.
   */
  retry(id: string): Promise<AdminOutputs['retry']>;
  /**
   * Puts a cancelled job that never started back to waiting (pg-boss's `resume`), at its own run time: ready,
   * or scheduled when that is still ahead. Resolves to `false` when the job is waiting or running; `CONFLICT`
   * for a job cancelled after it started, or in a flow (`replay` enqueues it again as a new job).
   */
  restore(id: string): Promise<AdminOutputs['restore']>;
  /**
   * Removes the job of type `name` holding idempotency key `key` while it waits (ready or scheduled), outside
   * flows (graphile-worker's `remove_job`); the key is free once it resolves `true`. Resolves to `false` when no
   * such job waits: none holds the key, or it is running or finished (cancel a running job instead).
   */
  removeByKey(name: string, key: string): Promise<AdminOutputs['removeByKey']>;
}

/** A job as `admin.job()` answers: its status, its payload, and the worker (an `admin.workers()` id) holding or last holding its lease. */
export type InspectedJob = AdminOutputs['job'];

/** A registered payload schema version, as `admin.schemas()` lists it: its fingerprint, JSON Schema and date. */
export type RegisteredSchema = Outputs['schemas']['list'][number];

/** A job type, as `admin.queues()` lists it: paused or not, its limits, and its job counts by state and version. */
export type QueueListing = AdminOutputs['queues'][number];

/** A job type's limits; `null`: no such limit. */
export type QueueLimits = QueueListing['limits'];

/** A change of limits for `setLimits`: a limit left out stays as it is, `null` clears it. */
export type LimitsChange = AdminInputs['setLimits']['limits'];

/**
 * A recurring job, as `admin.schedules()` lists it: its key, `source` (`crontab`: from a server's crontab;
 * `stored`: kept in the store by `upsertSchedule`), next occurrence and last run.
 */
export type ScheduleListing = AdminOutputs['schedules'][number];

/**
 * A schedule to keep in the store: `key` names it (an upsert with the same key replaces it); `cron` has five
 * fields (minute, hour, day of month, month, day of week) or six with seconds first, read in the IANA
 * `timezone` (default `UTC`); `version` is the payload's (default: the newest registered when each occurrence
 * is enqueued); `options` are the enqueue options of every occurrence, as a crontab entry takes them.
 */
export type ScheduleInput = Omit<AdminInputs['upsertSchedule'], 'options'> & {
  options?: CronEntry['options'] | undefined;
};

/** A connected worker, as `admin.workers()` lists it (`pid` is `null` when the worker sent none: a browser). */
export type WorkerListing = AdminOutputs['workers'][number];

export function createAdminApi({ api: queueApi, call }: { api: QueueApi; call: Call }): AdminApi {
  return {
    stats: () => call((api, signal) => api.admin.stats.query(undefined, { signal })),
    list: (query = {}) => call((api, signal) => api.admin.list.query(query, { signal })),
    job: (id) => call((api, signal) => api.admin.job.query({ id }, { signal })),
    cancel: (id) => call((api, signal) => api.jobs.cancel.mutate({ id }, { signal })),
    schemas: (name) => call((api, signal) => api.schemas.list.query(name ? { name } : undefined, { signal })),
    events: (name, options = {}) => ({
      [Symbol.asyncIterator]: () => oneByOne(watchEventsOnce(queueApi, name, options.signal)),
    }),
    schedules: () => call((api, signal) => api.admin.schedules.query(undefined, { signal })),
    upsertSchedule: (schedule) => call((api, signal) => api.admin.upsertSchedule.mutate(schedule, { signal })),
    removeSchedule: (key) => call((api, signal) => api.admin.removeSchedule.mutate({ key }, { signal })),
    removeSchema: (name, version) =>
      call((api, signal) => api.admin.removeSchema.mutate({ name, version }, { signal })),
    workers: () => call((api, signal) => api.admin.workers.query(undefined, { signal })),
    pause: (name) => call((api, signal) => api.admin.pause.mutate({ name }, { signal })),
    resume: (name) => call((api, signal) => api.admin.resume.mutate({ name }, { signal })),
    setLimits: (name, limits) => call((api, signal) => api.admin.setLimits.mutate({ name, limits }, { signal })),
    queues: () => call((api, signal) => api.admin.queues.query(undefined, { signal })),
    retryDead: (target) => call((api, signal) => api.admin.retryDead.mutate(target, { signal })),
    replay: (id) => call((api, signal) => api.admin.replay.mutate({ id }, { signal })),
    promote: (id) => call((api, signal) => api.admin.promote.mutate({ id }, { signal })),
    retry: (id) => call((api, signal) => api.admin.retry.mutate({ id }, { signal })),
    restore: (id) => call((api, signal) => api.admin.restore.mutate({ id }, { signal })),
    removeByKey: (name, key) => call((api, signal) => api.admin.removeByKey.mutate({ name, key }, { signal })),
  };
}
