import { JOB_STATES, type JobState } from '@workq/core';
import type { CommandContext } from '../command.ts';
import { json, table } from '../output.ts';
import { CallFailed } from '../server-client.ts';

/** A job type as `admin.queues` answers: paused or not, its limits and its counts by state. */
interface QueueRow {
  name: string;
  paused: boolean | null;
  limits: {
    concurrency: number | null;
    rateLimit: { max: number; perMs: number } | null;
    groupConcurrency: number | null;
  } | null;
  counts: Record<JobState, number>;
}

/** A server without `admin.queues` (an older one): counts from `admin.stats`, settings unknown. */
async function queuesFromStats(ctx: CommandContext): Promise<QueueRow[]> {
  const { counts } = await ctx.client.stats();
  const byName = new Map<string, QueueRow>();
  for (const { name, state, count } of counts) {
    let row = byName.get(name);
    if (!row) {
      row = {
        name,
        paused: null,
        limits: null,
        counts: Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as QueueRow['counts'],
      };
      byName.set(name, row);
    }
    row.counts[state] += count;
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
}

async function readQueues(ctx: CommandContext): Promise<QueueRow[]> {
  try {
    return await ctx.client.query<QueueRow[]>('admin.queues');
  } catch (error) {
    if (error instanceof CallFailed && error.code === 'NOT_FOUND') return queuesFromStats(ctx);
    throw error;
  }
}

/** `workq queues`: per job type, paused or not, its limits, and its jobs by state. */
export async function queuesCommand(ctx: CommandContext): Promise<void> {
  const queues = await readQueues(ctx);
  if (ctx.json) return ctx.out(json(queues));
  const limit = (value: number | null | undefined) => (value === null ? 'none' : value);
  ctx.out(
    table(
      ['NAME', 'PAUSED', 'CONCURRENCY', 'RATE LIMIT', 'GROUP LIMIT', ...JOB_STATES.map((s) => s.toUpperCase())],
      queues.map((q) => [
        q.name,
        q.paused === null ? null : q.paused ? 'yes' : 'no',
        limit(q.limits?.concurrency),
        q.limits === null
          ? null
          : q.limits.rateLimit
            ? `${q.limits.rateLimit.max}/${q.limits.rateLimit.perMs}ms`
            : 'none',
        limit(q.limits?.groupConcurrency),
        ...JOB_STATES.map((state) => q.counts[state] ?? 0),
      ]),
    ),
  );
}
