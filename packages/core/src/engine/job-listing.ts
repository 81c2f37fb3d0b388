import { WorkqError } from '../errors.ts';
import { JOB_STATES, type JobState, type JobStatus, MAX_BATCH_SIZE } from '../jobs.ts';
import { toJobStatus } from './status.ts';
import type { JobRecord, ListFilter } from './store.ts';

export interface ListQuery {
  name?: string;
  state?: JobState;
  /** Page size, 1-1000. @defaultValue 100 */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

/**
 * The store filter of a `list` at `now`, and the page size: the filter reads one job more than the page, so
 * that a next page is known. A `VALIDATION` error for an unknown state.
 */
export function listFilter(query: ListQuery, now: Date): { filter: ListFilter; limit: number } {
  const limit = Math.min(Math.max(1, Math.floor(query.limit ?? 100)), MAX_BATCH_SIZE);
  const filter: ListFilter = { limit: limit + 1 };
  if (query.name !== undefined) filter.name = query.name;
  if (query.cursor !== undefined) filter.afterId = query.cursor;
  if (query.state === 'scheduled' || query.state === 'ready') {
    filter.states = ['waiting'];
    filter.due = { now, ready: query.state === 'ready' };
  } else if (query.state !== undefined) {
    if (!(JOB_STATES as readonly string[]).includes(query.state)) {
      throw new WorkqError('VALIDATION', `state must be one of ${JOB_STATES.join(', ')}; got ${String(query.state)}.`);
    }
    filter.states = [query.state];
  }
  return { filter, limit };
}

/** The page of `limit` jobs `rows` (read by `listFilter`'s filter) begin with, and the cursor of the next one. */
export function toJobPage(
  rows: readonly JobRecord[],
  limit: number,
  now: Date,
): { jobs: JobStatus[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return {
    jobs: page.map((job) => toJobStatus(job, now)),
    nextCursor: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
  };
}
