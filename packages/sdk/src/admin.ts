import type { JobState, JobStatus } from '@workq/core';
import type { Call } from './transport.ts';

/** Operations that need the `admin` scope. */
export interface AdminApi {
  /** Counts by job type, version and state, and the consumers seen in the last minute with the versions they read. */
  stats(): Promise<{
    counts: { name: string; version: number; state: JobState; count: number }[];
    consumers: { id: string; host: string; name: string; minVersion: number; maxVersion: number; seenAt: Date }[];
  }>;
  /** A page of jobs, by type and state; pass `nextCursor` back for the next page. */
  list(query?: { name?: string; state?: JobState; limit?: number; cursor?: string }): Promise<{
    jobs: JobStatus[];
    nextCursor: string | null;
  }>;
  /** The recurring jobs the server's crontab enqueues, each with its key and next occurrence (`null`: none). */
  schedules(): Promise<
    { key: string; cron: string; timezone: string; name: string; version: number | null; nextRunAt: Date | null }[]
  >;
  /** Makes dead jobs (by ids, or all of one type) ready again with fresh attempts. Resolves to how many. */
  retryDead(target: { name: string } | { ids: string[] }): Promise<number>;
  /** Enqueues a finished job again as a new job. */
  replay(id: string): Promise<{ id: string }>;
}

export function createAdminApi(call: Call): AdminApi {
  return {
    stats: () => call((api, signal) => api.admin.stats.query(undefined, { signal })),
    list: (query = {}) => call((api, signal) => api.admin.list.query(query, { signal })),
    schedules: () => call((api, signal) => api.admin.schedules.query(undefined, { signal })),
    retryDead: (target) => call((api, signal) => api.admin.retryDead.mutate(target, { signal })),
    replay: (id) => call((api, signal) => api.admin.replay.mutate({ id }, { signal })),
  };
}
