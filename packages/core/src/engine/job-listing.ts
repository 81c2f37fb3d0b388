import { WorkqError } from '../errors.ts';
import { JOB_STATES, type JobState, type JobStatus, MAX_BATCH_SIZE } from '../jobs.ts';
import { firstIdAt } from './ids.ts';
import { toJobStatus } from './status.ts';
import type { JobRecord, ListFilter } from './store.ts';

export interface ListQuery {
  name?: string;
  state?: JobState;
  /** Only jobs enqueued with this version. */
  version?: number;
  /** Only jobs of this group (`EnqueueOptions.group`). */
  group?: string;
  /** Only the job with this id. */
  id?: string;
  /** Only jobs holding this idempotency key (read through the idempotency index when `name` is given too). */
  idempotencyKey?: string;
  /** Only the job holding this debounce key (read through the debounce index when `name` is given too). */
  debounceKey?: string;
  /**
   * Only jobs created at or after / at or before these times, read from their ids: job ids are UUIDv7,
   * ordered by creation time, so a time range is a range of the primary key. A caller-chosen id that is
   * not a UUIDv7 sorts by its text instead.
   */
  createdFrom?: Date;
  createdTo?: Date;
  /** Newest first (descending ids) instead of oldest first. */
  newestFirst?: boolean;
  /** Page size, 1-1000. @defaultValue 100 */
  limit?: number;
  /** The `nextCursor` of the previous page (of the same order). */
  cursor?: string;
  /**
   * Leave each job's result and error history unread (no `result`; `errors` holds the latest `error` alone):
   * for lists of rows, whose cost then does not grow with what the jobs returned or how often they failed.
   */
  withoutResults?: boolean;
}

/**
 * The store filter of a `list` at `now`, and the page size: the filter reads one job more than the page, so
 * that a next page is known. A `VALIDATION` error for an unknown state.
 */
export function listFilter(query: ListQuery, now: Date): { filter: ListFilter; limit: number } {
  const limit = Math.min(Math.max(1, Math.floor(query.limit ?? 100)), MAX_BATCH_SIZE);
  const filter: ListFilter = { limit: limit + 1, ...idBounds(query) };
  if (query.name !== undefined) filter.name = query.name;
  if (query.version !== undefined) filter.version = query.version;
  if (query.group !== undefined) filter.group = query.group;
  if (query.id !== undefined) filter.ids = [query.id];
  if (query.idempotencyKey !== undefined) filter.idempotencyKey = query.idempotencyKey;
  if (query.debounceKey !== undefined) filter.debounceKey = query.debounceKey;
  if (query.withoutResults) filter.withoutResult = true;
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

/** The keyset bounds of a query: its cursor in its order, and its creation time range as ids. */
function idBounds(query: ListQuery): Pick<ListFilter, 'afterId' | 'beforeId' | 'newestFirst'> {
  const from = query.createdFrom === undefined ? undefined : firstIdAt(query.createdFrom.getTime());
  const until = query.createdTo === undefined ? undefined : firstIdAt(query.createdTo.getTime() + 1);
  const { cursor } = query;
  if (query.newestFirst) {
    const before = cursor === undefined || (until !== undefined && until < cursor) ? until : cursor;
    return {
      newestFirst: true,
      ...(from === undefined ? {} : { afterId: from }),
      ...(before ? { beforeId: before } : {}),
    };
  }
  const after = cursor === undefined || (from !== undefined && from > cursor) ? from : cursor;
  return { ...(after === undefined ? {} : { afterId: after }), ...(until === undefined ? {} : { beforeId: until }) };
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
