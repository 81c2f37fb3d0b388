/**
 * The schedules kept in the store (`admin.upsertSchedule`), which every
 * server's leader enqueues beside its crontab, and the last occurrence each
 * schedule, stored or crontab, enqueued.
 */
export interface ScheduleStore {
  /** Inserts the schedule, or replaces the one with its `key`. One atomic write. */
  upsertSchedule(schedule: StoredSchedule): Promise<void>;

  /** Deletes the schedule with `key`; resolves to whether there was one. */
  removeSchedule(key: string): Promise<boolean>;

  /** Every stored schedule, ordered by key. */
  listSchedules(): Promise<StoredSchedule[]>;

  /**
   * Records `run` as the last occurrence of its schedule, unless one at the
   * same or a later `at` is recorded already (two servers may record one
   * occurrence, in either order).
   */
  recordScheduleRun(run: ScheduleRun): Promise<void>;

  /** The last runs recorded for these schedule keys (keys without one are left out). */
  listScheduleRuns(keys: readonly string[]): Promise<ScheduleRun[]>;
}

/** A schedule kept in the store: a crontab entry added at run time, named by its `key`. */
export interface StoredSchedule {
  key: string;
  /** The cron expression, checked before it is stored (see `CronEntry.cron`). */
  cron: string;
  /** The IANA time zone the expression is read in. */
  timezone: string;
  name: string;
  /** `null`: the newest version registered when each occurrence is enqueued. */
  version: number | null;
  /** The payload of every occurrence, as `toStoredValue` encodes it. */
  payload: unknown;
  /** Enqueue options of every occurrence (see `CronEntry.options`), a JSON object, or `null`. */
  options: Record<string, unknown> | null;
  updatedAt: Date;
}

/** The last occurrence a schedule enqueued. */
export interface ScheduleRun {
  /** The schedule's occurrence-key prefix: `cron:<key>` for a crontab entry, `schedule:<key>` for a stored one. */
  key: string;
  /** The job the occurrence enqueued (or found, by its idempotency key). */
  jobId: string;
  /** The occurrence's time. */
  at: Date;
}
