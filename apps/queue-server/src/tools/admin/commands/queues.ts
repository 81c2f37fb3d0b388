import { JOB_STATES } from '@workq/core';
import type { CommandContext } from '../command.ts';
import { json, table } from '../output.ts';
import type { AdminClient } from '../server-client.ts';

/** A job type's limits, as the server reports them. */
export type Limits = Awaited<ReturnType<AdminClient['queues']>>[number]['limits'];
/** A change of limits: one left out stays as it is, `null` clears it. */
export type LimitsChange = Parameters<AdminClient['setLimits']>[0]['limits'];

/** A job type's limits as the tables show them: concurrency, rate limit (`max/perMs` + `ms`), group concurrency. */
export function limitCells(limits: Limits): [string | number, string, string | number] {
  return [
    limits.concurrency ?? 'none',
    limits.rateLimit ? `${limits.rateLimit.max}/${limits.rateLimit.perMs}ms` : 'none',
    limits.groupConcurrency ?? 'none',
  ];
}

/** `workq queues`: per job type, paused or not, its limits, and its jobs by state. */
export async function queuesCommand(ctx: CommandContext): Promise<void> {
  const queues = await ctx.client.queues();
  if (ctx.json) return ctx.out(json(queues));
  ctx.out(
    table(
      ['NAME', 'PAUSED', 'CONCURRENCY', 'RATE LIMIT', 'GROUP LIMIT', ...JOB_STATES.map((s) => s.toUpperCase())],
      queues.map(({ name, paused, limits, counts }) => [
        name,
        paused ? 'yes' : 'no',
        ...limitCells(limits),
        ...JOB_STATES.map((state) => counts[state]),
      ]),
    ),
  );
}
