import { type JobState, type JobStatus, MAX_BATCH_SIZE } from '@workq/core';
import type { Api } from './api.ts';

/** The most jobs one list reads (the store pages by id, oldest first, so "newest first" reads before it sorts). */
export const MAX_SCANNED = 10 * MAX_BATCH_SIZE;

/** Windows back from the newest time, in which jobs are read newest window first: most lists fill from the first. */
const WINDOWS_MS = [10_000, 60_000, 10 * 60_000, 3_600_000, 86_400_000, 7 * 86_400_000, 30 * 86_400_000];

/**
 * The smallest id a job created at `ms` can have. Job ids are UUIDv7,
 * ordered by creation time (core's `newJobId`): the time followed by zeros
 * sorts before every id made at or after it, so it is a keyset cursor for
 * "created at or after `ms`".
 */
export function idAt(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

const UUID_V7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** When the job with this id was created (epoch ms), read from the id; `undefined` for text that is not a UUIDv7. */
export function timeOfId(text: string): number | undefined {
  const match = UUID_V7.exec(text);
  return match ? Number.parseInt(`${match[1]}${match[2]}`, 16) : undefined;
}

export interface ScanQuery {
  name: string;
  state: string;
  /** Created at or after (epoch ms). */
  fromMs?: number;
  /** Created at or before (epoch ms). */
  toMs?: number;
}

/**
 * Jobs of a type and state created within the range, newest first, up to
 * `MAX_SCANNED`. Read window by window back in time, each window by keyset
 * pages from its start to the next window's start; a window holding more
 * than there is room for is halved, newer half first, so what is kept is
 * always the newest. `truncated` when more matched.
 */
export async function scanJobs(
  api: Api,
  query: ScanQuery,
  nowMs = Date.now(),
): Promise<{ jobs: JobStatus[]; truncated: boolean }> {
  const from = query.fromMs ?? 0;
  const newest = query.toMs ?? nowMs;
  const starts = [...WINDOWS_MS.map((ms) => newest - ms).filter((start) => start > from), from];
  const jobs: JobStatus[] = [];
  // With no end to the range, the newest window is open: a server clock ahead of this one loses nothing.
  let end = query.toMs === undefined ? undefined : query.toMs + 1;
  for (const start of starts) {
    if (await readNewestFirst(api, query, { start, end, nowMs }, jobs)) return { jobs, truncated: true };
    end = start;
  }
  return { jobs, truncated: false };
}

/** A stretch of creation time, `[start, end)`; no `end`: open. */
interface Stretch {
  start: number;
  end: number | undefined;
  nowMs: number;
}

/** Appends the jobs created in the stretch to `out`, newest first, while there is room; `true` when some were left out. */
async function readNewestFirst(api: Api, query: ScanQuery, stretch: Stretch, out: JobStatus[]): Promise<boolean> {
  const { start, end, nowMs } = stretch;
  const room = MAX_SCANNED - out.length;
  const window = await readWindow(api, query, idAt(start), end === undefined ? undefined : idAt(end), room);
  if (!window.more) {
    out.push(...window.jobs.reverse());
    return false;
  }
  if (room === 0) return true;
  // An open stretch is closed a minute ahead of this clock; the jobs beyond (a server clock further ahead) come first.
  const closeAt = end === undefined && start < nowMs + 60_000 ? nowMs + 60_000 : undefined;
  if (closeAt !== undefined) {
    if (await readNewestFirst(api, query, { start: closeAt, end: undefined, nowMs }, out)) return true;
    return readNewestFirst(api, query, { start, end: closeAt, nowMs }, out);
  }
  if (end === undefined || end - start <= 1) {
    // One millisecond (or the far future) holds more than there is room for: its first ones are kept.
    out.push(...window.jobs.reverse());
    return true;
  }
  const mid = Math.floor((start + end) / 2);
  if (await readNewestFirst(api, query, { start: mid, end, nowMs }, out)) return true;
  return readNewestFirst(api, query, { start, end: mid, nowMs }, out);
}

/** Jobs with ids after `after` and before `before`, oldest first, at most `limit`; `more` when there were more. */
async function readWindow(
  api: Api,
  query: ScanQuery,
  after: string,
  before: string | undefined,
  limit: number,
): Promise<{ jobs: JobStatus[]; more: boolean }> {
  const jobs: JobStatus[] = [];
  let cursor: string | undefined = after;
  while (cursor !== undefined) {
    const page = await api.admin.list.query({
      ...(query.name ? { name: query.name } : {}),
      ...(query.state ? { state: query.state as JobState } : {}),
      limit: MAX_BATCH_SIZE,
      cursor,
    });
    for (const job of page.jobs as JobStatus[]) {
      if (before !== undefined && job.id >= before) return { jobs, more: false };
      if (jobs.length === limit) return { jobs, more: true };
      jobs.push(job);
    }
    cursor = page.nextCursor ?? undefined;
  }
  return { jobs, more: false };
}
