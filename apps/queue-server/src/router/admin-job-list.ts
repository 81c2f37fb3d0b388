import { JOB_STATES, type JobError, type JobState, type JobStatus } from '@workq/core';
import type { Engine, ListQuery } from '@workq/core/engine';
import { z } from 'zod';
import { jobName, storableText, version } from './inputs.ts';
import { adminProcedure } from './scoped.ts';

/** The most rows one `admin.jobs` page holds. */
export const MAX_JOB_PAGE = 200;

/** The most characters of a job's error message a list row carries; the job's page shows all of it. */
export const ROW_MESSAGE_CHARS = 300;

/**
 * One job as a list shows it: what a row needs and nothing more (no payload, no result, the error's message
 * cut to `ROW_MESSAGE_CHARS`, no stack), so a page's size does not grow with what jobs carry.
 */
export interface JobRow {
  id: string;
  name: string;
  version: number;
  state: JobState;
  attempts: number;
  maxAttempts: number;
  progress: number;
  createdAt: Date;
  updatedAt: Date;
  runAt: Date;
  finishedAt?: Date;
  idempotencyKey?: string;
  group?: string;
  error?: Pick<JobError, 'message' | 'name' | 'attempt' | 'at' | 'permanent' | 'code'>;
  /** For a child in a flow: its parent. */
  parentId?: string;
  /** For a parent: how many children it has had, and how many it still waits for. */
  childCount?: number;
  pendingChildren?: number;
}

/** A page of rows, newest first, and the cursor of the next (older) page; `null` on the last. */
export interface JobRowPage {
  jobs: JobRow[];
  nextCursor: string | null;
}

const jobRowsInput = z.object({
  name: jobName.optional(),
  state: z.enum(JOB_STATES).optional(),
  version: version.optional(),
  group: storableText(1, 255).optional(),
  /** A job id, an idempotency key or a debounce key: the jobs with that id or holding that key, within the filter. */
  search: storableText(1, 255).optional(),
  /** Created at or after / at or before (epoch milliseconds). */
  createdFromMs: z.number().int().nonnegative().optional(),
  createdToMs: z.number().int().nonnegative().optional(),
  limit: z.number().int().min(1).max(MAX_JOB_PAGE).optional(),
  cursor: storableText(1, 64).optional(),
});

export const jobListProcedures = {
  /**
   * The dashboard's job list: newest first, filtered on the server and paged by keyset over the store's
   * indexes, so any page costs one call of at most `limit` small rows whatever the store holds.
   */
  jobs: adminProcedure.input(jobRowsInput).query(async ({ ctx, input }): Promise<JobRowPage> => {
    const { search, createdFromMs, createdToMs, ...rest } = input;
    const query: ListQuery = {
      ...rest,
      limit: input.limit ?? 50,
      newestFirst: true,
      // A row shows neither: a page reads no job's result or error history, whatever their sizes.
      withoutResults: true,
      ...(createdFromMs === undefined ? {} : { createdFrom: new Date(createdFromMs) }),
      ...(createdToMs === undefined ? {} : { createdTo: new Date(createdToMs) }),
    };
    if (search === undefined) {
      const page = await ctx.services.engine.list(query);
      return { jobs: page.jobs.map(toJobRow), nextCursor: page.nextCursor };
    }
    return { jobs: (await searchJobs(ctx.services.engine, query, search)).map(toJobRow), nextCursor: null };
  }),
};

/**
 * The job with id `text` and the jobs holding `text` as their idempotency or debounce key, all within
 * `query`, newest first: three look-ups, each through the store's index of its field.
 */
async function searchJobs(engine: Engine, query: ListQuery, text: string): Promise<JobStatus[]> {
  const pages = await Promise.all([
    text.length <= 64 ? engine.list({ ...query, id: text }) : { jobs: [] },
    engine.list({ ...query, idempotencyKey: text }),
    engine.list({ ...query, debounceKey: text }),
  ]);
  const found = new Map(pages.flatMap((page) => page.jobs).map((job) => [job.id, job]));
  return [...found.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

function toJobRow(job: JobStatus): JobRow {
  const row: JobRow = {
    id: job.id,
    name: job.name,
    version: job.version,
    state: job.state,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    progress: job.progress,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    runAt: job.runAt,
  };
  if (job.finishedAt) row.finishedAt = job.finishedAt;
  if (job.idempotencyKey) row.idempotencyKey = job.idempotencyKey;
  if (job.group) row.group = job.group;
  if (job.parentId) row.parentId = job.parentId;
  if (job.childCount) row.childCount = job.childCount;
  if (job.pendingChildren) row.pendingChildren = job.pendingChildren;
  if (job.error) {
    const { message, name, attempt, at, permanent, code } = job.error;
    row.error = { message: message.slice(0, ROW_MESSAGE_CHARS), attempt, at };
    if (name) row.error.name = name;
    if (permanent) row.error.permanent = permanent;
    if (code) row.error.code = code;
  }
  return row;
}
