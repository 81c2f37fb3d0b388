import { JOB_STATES, type JobState, MAX_BATCH_SIZE } from '@workq/core';
import { WorkqError } from '@workq/sdk';
import { type CommandContext, oneArgument, UsageError, wholeNumber } from '../command.ts';
import { drawFlow } from '../flow-tree.ts';
import { fields, json, table } from '../output.ts';

const jobId = (ctx: CommandContext, command: string) => oneArgument(ctx, `jobs ${command}`, 'job id');

function listQuery(ctx: CommandContext) {
  const { name, state, limit, cursor } = ctx.options;
  if (state !== undefined && !(JOB_STATES as readonly string[]).includes(state)) {
    throw new UsageError(`--state must be one of ${JOB_STATES.join(', ')}; got "${state}".`);
  }
  return { name, state: state as JobState | undefined, limit: wholeNumber(limit, 'limit', 1, MAX_BATCH_SIZE), cursor };
}

/** `workq jobs list [--name <type>] [--state <state>] [--limit <n>] [--cursor <c>]`: a page of jobs, oldest first. */
async function list(ctx: CommandContext): Promise<void> {
  if (ctx.positionals.length > 0) throw new UsageError('workq jobs list takes no arguments, only options.');
  const page = await ctx.admin.list(listQuery(ctx));
  if (ctx.json) return ctx.out(json(page));
  ctx.out(
    table(
      ['ID', 'NAME', 'VERSION', 'STATE', 'ATTEMPTS', 'RUN AT', 'CREATED', 'ERROR'],
      page.jobs.map((job) => [
        job.id,
        job.name,
        job.version,
        job.state,
        `${job.attempts}/${job.maxAttempts}`,
        job.runAt,
        job.createdAt,
        job.error?.message,
      ]),
    ),
  );
  if (page.nextCursor) ctx.out(`more: --cursor ${page.nextCursor}\n`);
}

/**
 * `workq jobs show <id>`: one job's status, payload, result, last error and lease holder; for a parent, its
 * flow below it as a tree, each job with its state.
 */
async function show(ctx: CommandContext): Promise<void> {
  const job = await ctx.admin.job(jobId(ctx, 'show'));
  if (ctx.json) return ctx.out(json(job));
  ctx.out(fields(Object.entries(job).filter(([key, value]) => value !== undefined && key !== 'children')));
  if ((job.childCount ?? 0) > 0) ctx.out(`\nflow:\n${await drawFlow(ctx.admin, job)}`);
}

/** `workq jobs retry --dead --name <type>`: every dead job of one type ready again, with fresh attempts. */
async function retryAllDead(ctx: CommandContext): Promise<void> {
  const { name } = ctx.options;
  if (ctx.positionals.length > 0 || !name) {
    throw new UsageError('workq jobs retry --dead takes --name <type> and no job id.');
  }
  const retried = await ctx.admin.retryDead({ name });
  ctx.out(ctx.json ? json({ name, retried }) : `retried ${retried} dead ${name} job${retried === 1 ? '' : 's'}\n`);
}

/** `workq jobs retry <id>`: a dead job ready again, with fresh attempts (`--dead --name <type>`: all of a type). */
async function retry(ctx: CommandContext): Promise<void> {
  if (ctx.options.dead) return retryAllDead(ctx);
  const id = jobId(ctx, 'retry');
  const retried = await ctx.admin.retryDead({ ids: [id] });
  if (retried === 0) {
    const { state } = await ctx.admin.job(id);
    throw new WorkqError('CONFLICT', `Job ${id} is ${state}: only dead jobs can be retried (replay makes a new job).`);
  }
  ctx.out(ctx.json ? json({ id, retried: true }) : `retried ${id}\n`);
}

/** `workq jobs cancel <id>`: a waiting or active job cancelled. */
async function cancel(ctx: CommandContext): Promise<void> {
  const id = jobId(ctx, 'cancel');
  if (!(await ctx.admin.cancel(id))) {
    const { state } = await ctx.admin.job(id);
    throw new WorkqError(
      'CONFLICT',
      `Job ${id} is ${state} already: only scheduled, ready or active jobs can be cancelled.`,
    );
  }
  ctx.out(ctx.json ? json({ id, cancelled: true }) : `cancelled ${id}\n`);
}

/** `workq jobs replay <id>`: a finished job enqueued again, as a new job. */
async function replay(ctx: CommandContext): Promise<void> {
  const id = jobId(ctx, 'replay');
  const replayed = await ctx.admin.replay(id);
  ctx.out(ctx.json ? json({ id, replayedAs: replayed.id }) : `replayed ${id} as ${replayed.id}\n`);
}

/** The `workq jobs` subcommands, by name. */
export const JOB_COMMANDS = { list, show, retry, cancel, replay } as const;
