import type { JobEvent, JobState, JobStatus, ResyncEvent } from '@workq/core';
import type { CronEntry, JobCount, SchemaEntry, WorkerPresence } from '@workq/core/engine';
import { watchEventsOnce } from './admin-events.ts';
import type { Call, QueueApi } from './transport.ts';

/** Operations that need the `admin` scope. */
export interface AdminApi {
  /** Counts by job type, version and state, and the consumers seen in the last minute with the versions they read. */
  stats(): Promise<{ counts: JobCount[]; consumers: WorkerPresence[] }>;
  /** A page of jobs, by type and state; pass `nextCursor` back for the next page. */
  list(query?: {
    name?: string | undefined;
    state?: JobState | undefined;
    limit?: number | undefined;
    cursor?: string | undefined;
  }): Promise<{
    jobs: JobStatus[];
    nextCursor: string | null;
  }>;
  /** One job as an operator inspects it: its status, its payload and the worker holding (or last holding) it. */
  job(id: string): Promise<InspectedJob>;
  /** Cancels a scheduled, ready or active job; resolves to `false` when it had ended already. */
  cancel(id: string): Promise<boolean>;
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
  upsertSchedule(schedule: ScheduleInput): Promise<Omit<ScheduleListing, 'lastRun'>>;
  /** Removes a stored schedule; resolves to whether there was one. */
  removeSchedule(key: string): Promise<boolean>;
  /**
   * Removes the registered payload schema of one job version, on every
   * server; resolves to whether one was registered. The version is then free
   * to register again (by a token with `register:<job>`), and payloads of it
   * are refused until it is. Jobs of that version already waiting stay: a
   * consumer that declares the version still runs them, checked against its
   * own schema. See docs/operations.md.
   */
  removeSchema(name: string, version: number): Promise<boolean>;
  /**
   * The worker registry: each consumer seen recently (claiming, or extending the leases of jobs it runs), with
   * its host, process id, job types and versions, start time, last seen time and the jobs it holds.
   */
  workers(): Promise<WorkerListing[]>;
  /**
   * Pauses a job type on every server: claims lease none of its jobs until `resume`, and the consumers'
   * waiting claims stay parked; its jobs keep arriving. Kept in the store.
   */
  pause(name: string): Promise<void>;
  /** Ends a `pause`: claims of the type lease again at once. */
  resume(name: string): Promise<void>;
  /**
   * Changes a job type's limits, kept in the store and honoured by every server's claims: a limit left out
   * stays as it is, `null` clears it. Resolves to the limits now set. See docs/flow-control.md.
   */
  setLimits(name: string, limits: LimitsChange): Promise<QueueLimits>;
  /** Per job type (with jobs or settings): paused or not, its limits, and its job counts by state and version. */
  queues(): Promise<QueueListing[]>;
  /** Makes dead jobs (by ids, or all of one type) ready again with fresh attempts. Resolves to how many. */
  retryDead(target: { name: string } | { ids: string[] }): Promise<number>;
  /** Enqueues a finished job again as a new job; resolves to that job's id and state. */
  replay(id: string): Promise<{ id: string; created: boolean; state: JobState }>;
  /**
   * Runs a scheduled job now (a delayed one, or one waiting out a retry's backoff), keeping its id and
   * attempts; resolves to `false` when it is not scheduled. `NOT_FOUND` for no such job.
   */
  promote(id: string): Promise<boolean>;
}

/** A job as `admin.job()` answers: its status, its payload, and the worker holding or last holding its lease. */
export interface InspectedJob extends JobStatus {
  payload: unknown;
  /** The worker (an `admin.workers()` id) holding the job's lease, or that last held it; `null` when none did. */
  workerId: string | null;
}

/** A registered payload schema version, as `admin.schemas()` lists it: its fingerprint, JSON Schema and date. */
export type RegisteredSchema = SchemaEntry;

/** A job type's limits; `null`: no such limit. */
export interface QueueLimits {
  /** Active jobs of the type across all workers and servers, never exceeded. */
  concurrency: number | null;
  /** At most `max` jobs of the type start in any window of `perMs`, across all workers. */
  rateLimit: { max: number; perMs: number } | null;
  /** Active jobs per group (the enqueue option `group`). */
  groupConcurrency: number | null;
}

/** A change of limits for `setLimits`: a limit left out stays as it is, `null` clears it. */
export type LimitsChange = { [K in keyof QueueLimits]?: QueueLimits[K] | undefined };

/** A job type, as `admin.queues()` lists it. */
export interface QueueListing {
  name: string;
  paused: boolean;
  limits: QueueLimits;
  /** Its jobs by state, every version together. */
  counts: Record<JobState, number>;
  /** Its jobs by state, per version enqueued, oldest first. */
  versions: { version: number; counts: Record<JobState, number> }[];
}

/** A recurring job, as `admin.schedules()` lists it. */
export interface ScheduleListing {
  key: string;
  /** `crontab`: from a server's crontab; `stored`: kept in the store by `upsertSchedule`. */
  source: 'crontab' | 'stored';
  cron: string;
  timezone: string;
  name: string;
  version: number | null;
  nextRunAt: Date | null;
  lastRun: { jobId: string; at: Date; state: JobState | null } | null;
}

/** A schedule to keep in the store. */
export interface ScheduleInput {
  /** Names it: an upsert with the same key replaces it. */
  key: string;
  /** Five fields (minute, hour, day of month, month, day of week), or six with seconds first. */
  cron: string;
  /** The IANA time zone the expression is read in. @defaultValue 'UTC' */
  timezone?: string | undefined;
  name: string;
  payload?: unknown;
  /** The payload's version. @defaultValue the newest registered when each occurrence is enqueued */
  version?: number | undefined;
  /** Enqueue options of every occurrence. */
  options?: CronEntry['options'];
}

/** A connected worker, as `admin.workers()` lists it. */
export interface WorkerListing {
  /** Unique per `sdk.consume` call. */
  id: string;
  host: string;
  /** `null` when the worker sent none (a browser). */
  pid: number | null;
  names: string[];
  versions: number[];
  startedAt: Date | null;
  lastSeenAt: Date;
  activeJobIds: string[];
}

export function createAdminApi({ api: queueApi, call }: { api: QueueApi; call: Call }): AdminApi {
  return {
    stats: () => call((api, signal) => api.admin.stats.query(undefined, { signal })),
    list: (query = {}) => call((api, signal) => api.admin.list.query(query, { signal })),
    job: (id) => call((api, signal) => api.admin.job.query({ id }, { signal })),
    cancel: (id) => call((api, signal) => api.jobs.cancel.mutate({ id }, { signal })),
    schemas: (name) => call((api, signal) => api.schemas.list.query(name ? { name } : undefined, { signal })),
    events: (name, options = {}) => ({ [Symbol.asyncIterator]: () => watchEventsOnce(queueApi, name, options.signal) }),
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
  };
}
