import { JOB_STATES } from '@workq/core';
import type { QueueLimits } from '@workq/sdk';
import type { CommandContext } from '../command.ts';
import { json, table } from '../output.ts';

/**
 * A job type's limits as the tables show them: concurrency, rate limit (`max/perMs` + `ms`), group concurrency,
 * group order (`strict`, or `none`).
 */
export function limitCells(limits: QueueLimits): [string | number, string, string | number, string] {
  return [
    limits.concurrency ?? 'none',
    limits.rateLimit ? `${limits.rateLimit.max}/${limits.rateLimit.perMs}ms` : 'none',
    limits.groupConcurrency ?? 'none',
    limits.groupOrder ?? 'none',
  ];
}

/**
 * `workq queues`: per job type, paused or not, when its hold ends (`ctx.rateLimited`; `none` when not held), its
 * limits, and its jobs by state.
 */
export async function queuesCommand(ctx: CommandContext): Promise<void> {
  const queues = await ctx.admin.queues();
  if (ctx.json) return ctx.out(json(queues));
  ctx.out(
    table(
      [
        'NAME',
        'PAUSED',
        'HELD UNTIL',
        'CONCURRENCY',
        'RATE LIMIT',
        'GROUP LIMIT',
        'GROUP ORDER',
        ...JOB_STATES.map((s) => s.toUpperCase()),
      ],
      queues.map(({ name, paused, heldUntil, limits, counts }) => [
        name,
        paused ? 'yes' : 'no',
        heldUntil ? new Date(heldUntil).toISOString() : 'none',
        ...limitCells(limits),
        ...JOB_STATES.map((state) => counts[state]),
      ]),
    ),
  );
}
