import { JOB_STATES } from '@workq/core';
import type { CommandContext } from '../command.ts';
import { json, table } from '../output.ts';

/** `workq queues`: per job type, paused or not, its limits, and its jobs by state. */
export async function queuesCommand(ctx: CommandContext): Promise<void> {
  const queues = await ctx.client.queues();
  if (ctx.json) return ctx.out(json(queues));
  const limit = (value: number | null) => value ?? 'none';
  ctx.out(
    table(
      ['NAME', 'PAUSED', 'CONCURRENCY', 'RATE LIMIT', 'GROUP LIMIT', ...JOB_STATES.map((s) => s.toUpperCase())],
      queues.map(({ name, paused, limits, counts }) => [
        name,
        paused ? 'yes' : 'no',
        limit(limits.concurrency),
        limits.rateLimit ? `${limits.rateLimit.max}/${limits.rateLimit.perMs}ms` : 'none',
        limit(limits.groupConcurrency),
        ...JOB_STATES.map((state) => counts[state]),
      ]),
    ),
  );
}
