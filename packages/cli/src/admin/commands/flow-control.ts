import type { LimitsChange, QueueLimits } from '@workq/sdk';
import { type CommandContext, oneArgument, UsageError, wholeNumber } from '../command.ts';
import { fields, json } from '../output.ts';
import { limitCells } from './queues.ts';

/** The largest limit the server takes. */
const MAX_LIMIT = 1_000_000_000;

/** `workq pause <name>`: claims of the job type stop on every server; jobs keep arriving and wait. */
async function pause(ctx: CommandContext): Promise<void> {
  const name = oneArgument(ctx, 'pause', 'job type');
  await ctx.admin.pause(name);
  ctx.out(ctx.json ? json({ name, paused: true }) : `paused ${name}\n`);
}

/** `workq resume <name>`: ends a pause and lifts a hold (`ctx.rateLimited`): claims run now. */
async function resume(ctx: CommandContext): Promise<void> {
  const name = oneArgument(ctx, 'resume', 'job type');
  await ctx.admin.resume(name);
  ctx.out(ctx.json ? json({ name, paused: false }) : `resumed ${name}\n`);
}

/** A limit option: left out (undefined), `none` (cleared, null) or a whole number. */
function limitOption(value: string | undefined, option: string): number | null | undefined {
  return value === 'none' ? null : wholeNumber(value, option, 1, MAX_LIMIT);
}

/** `--rate-limit`: left out, `none`, or `MAX/PERMS` (at most MAX jobs started per PERMS milliseconds). */
function rateLimitOption(value: string | undefined): { max: number; perMs: number } | null | undefined {
  if (value === undefined || value === 'none') return value === 'none' ? null : undefined;
  const [max, perMs, extra] = value.split('/');
  if (perMs === undefined || extra !== undefined) {
    throw new UsageError(`--rate-limit must be MAX/PERMS (e.g. 10/1000: 10 jobs a second) or none; got "${value}".`);
  }
  return {
    max: wholeNumber(max, 'rate-limit MAX', 1, MAX_LIMIT) as number,
    perMs: wholeNumber(perMs, 'rate-limit PERMS', 1, MAX_LIMIT) as number,
  };
}

/** `--group-order`: left out, `none` (cleared), or `strict` (a failed job holds its group). */
function groupOrderOption(value: string | undefined): 'strict' | null | undefined {
  if (value === undefined || value === 'strict') return value;
  if (value === 'none') return null;
  throw new UsageError(`--group-order must be strict (a failed job holds its group) or none; got "${value}".`);
}

/**
 * `workq limits <name> [--concurrency N|none] [--rate-limit MAX/PERMS|none] [--group-concurrency N|none]
 * [--group-order strict|none]`: changes the limits given (`none` clears one) and prints the limits now set; with
 * none given, prints them.
 */
async function limits(ctx: CommandContext): Promise<void> {
  const name = oneArgument(ctx, 'limits', 'job type');
  const change: LimitsChange = {};
  const concurrency = limitOption(ctx.options.concurrency, 'concurrency');
  const rateLimit = rateLimitOption(ctx.options.rateLimit);
  const groupConcurrency = limitOption(ctx.options.groupConcurrency, 'group-concurrency');
  if (concurrency !== undefined) change.concurrency = concurrency;
  if (rateLimit !== undefined) change.rateLimit = rateLimit;
  if (groupConcurrency !== undefined) change.groupConcurrency = groupConcurrency;
  const groupOrder = groupOrderOption(ctx.options.groupOrder);
  if (groupOrder !== undefined) change.groupOrder = groupOrder;
  let set: QueueLimits;
  let paused: boolean | undefined;
  if (Object.keys(change).length > 0) {
    set = await ctx.admin.setLimits(name, change);
  } else {
    const queue = (await ctx.admin.queues()).find((q) => q.name === name);
    // A job type with no jobs and no settings yet has no limits.
    set = queue?.limits ?? { concurrency: null, rateLimit: null, groupConcurrency: null, groupOrder: null };
    paused = queue?.paused ?? false;
  }
  if (ctx.json) return ctx.out(json({ name, ...(paused === undefined ? {} : { paused }), limits: set }));
  const cells = limitCells(set);
  const pausedLine: [string, unknown][] = paused === undefined ? [] : [['paused', paused ? 'yes' : 'no']];
  ctx.out(
    fields([
      ['name', name],
      ...pausedLine,
      ['concurrency', cells[0]],
      ['rate limit', cells[1]],
      ['group concurrency', cells[2]],
      ['group order', cells[3]],
    ]),
  );
}

/** The flow-control commands, by name: each takes a job type. */
export const FLOW_COMMANDS = { pause, resume, limits } as const;
