import type { JobStatus } from '@workq/core';
import { describe, expect, it } from 'vitest';
import type { Api } from './api.ts';
import { idAt, MAX_SCANNED, scanJobs, timeOfId } from './job-scan.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const MINUTE = 60_000;
const DAY = 86_400_000;

/** A UUIDv7-shaped id made at `ms`, `n` telling apart ids of one millisecond. */
const idMadeAt = (ms: number, n = 0) =>
  idAt(ms).replace(/-0000-0000-0{12}$/, `-7000-8000-${String(n).padStart(12, '0')}`);

/** `admin.list` over jobs in memory: keyset pages by id, ascending, as every store answers it. */
function listing(ids: string[]): { api: Api; calls: () => number } {
  const sorted = [...ids].sort();
  let calls = 0;
  const query = async (input: { cursor?: string; limit?: number }) => {
    calls++;
    const after = sorted.filter((id) => input.cursor === undefined || id > input.cursor);
    const page = after.slice(0, input.limit ?? 100);
    const jobs = page.map((id) => ({ id }) as JobStatus);
    return { jobs, nextCursor: after.length > page.length ? (page.at(-1) ?? null) : null };
  };
  return { api: { admin: { list: { query } } } as unknown as Api, calls: () => calls };
}

describe('scanJobs', () => {
  const times = [NOW - 10_000, NOW - 30 * MINUTE, NOW - 2 * DAY, NOW - 60 * DAY, NOW - 400 * DAY];
  const ids = times.map((ms) => idMadeAt(ms));

  it('cursors sort before every id made at or after their time, and after every id made before', () => {
    expect(idAt(NOW) < idMadeAt(NOW)).toBe(true);
    expect(idAt(NOW) > idMadeAt(NOW - 1, 999)).toBe(true);
  });

  it('reads the creation time back from a job id, and from nothing else', () => {
    expect(timeOfId(idMadeAt(NOW - 400 * DAY, 7))).toBe(NOW - 400 * DAY);
    expect(timeOfId('invoice-42')).toBeUndefined();
    expect(timeOfId('0190b7a2-aaaa-4bbb-8ccc-dddddddddddd')).toBeUndefined();
  });

  it('finds an old job by its id in one read of its millisecond', async () => {
    const store = listing(ids);
    const at = timeOfId(ids[4]!)!;
    const { jobs } = await scanJobs(store.api, { name: '', state: '', fromMs: at, toMs: at }, NOW);
    expect(jobs.map((job) => job.id)).toEqual([ids[4]]);
    expect(store.calls()).toBe(1);
  });

  it('reads every job, newest first, window by window back in time', async () => {
    const { jobs, truncated } = await scanJobs(listing(ids).api, { name: '', state: '' }, NOW);
    expect(jobs.map((job) => job.id)).toEqual(ids);
    expect(truncated).toBe(false);
  });

  it('keeps to a creation time range at both ends', async () => {
    const since = await scanJobs(listing(ids).api, { name: '', state: '', fromMs: NOW - DAY }, NOW);
    expect(since.jobs.map((job) => job.id)).toEqual(ids.slice(0, 2));
    const until = await scanJobs(listing(ids).api, { name: '', state: '', toMs: NOW - 3 * DAY }, NOW);
    expect(until.jobs.map((job) => job.id)).toEqual(ids.slice(3));
    const between = await scanJobs(
      listing(ids).api,
      { name: '', state: '', fromMs: NOW - 90 * DAY, toMs: NOW - MINUTE },
      NOW,
    );
    expect(between.jobs.map((job) => job.id)).toEqual(ids.slice(1, 4));
  });

  it('stops at MAX_SCANNED with the newest, and says more matched', async () => {
    const many = Array.from({ length: MAX_SCANNED + 5 }, (_, i) => idMadeAt(NOW - 1000 - i, i));
    const { jobs, truncated } = await scanJobs(listing(many).api, { name: '', state: '' }, NOW);
    expect(jobs).toHaveLength(MAX_SCANNED);
    expect(jobs[0]?.id).toBe(many[0]);
    expect(truncated).toBe(true);
  });
});
