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

/**
 * `workq jobs retry <id>`: a dead or completed job run again in place, ready with fresh attempts
 * (`--dead --name <type>`: every dead job of a type).
 */
async function retry(ctx: CommandContext): Promise<void> {
  if (ctx.options.dead) return retryAllDead(ctx);
  const id = jobId(ctx, 'retry');
  if (!(await ctx.admin.retry(id))) await refuseLive(ctx, id, 'only dead or completed jobs can be retried');
  ctx.out(ctx.json ? json({ id, retried: true }) : `retried ${id}\n`);
}

/** `workq jobs promote <id>`: a scheduled job (delayed, or waiting out a retry's backoff) ready now. */
async function promote(ctx: CommandContext): Promise<void> {
  const id = jobId(ctx, 'promote');
  if (!(await ctx.admin.promote(id))) await refuseLive(ctx, id, 'only scheduled jobs can be run early');
  ctx.out(ctx.json ? json({ id, promoted: true }) : `promoted ${id}: ready now\n`);
}

/** `workq jobs restore <id>`: a cancelled job that never started waiting again, at its own run time. */
async function restore(ctx: CommandContext): Promise<void> {
  const id = jobId(ctx, 'restore');
  if (!(await ctx.admin.restore(id))) await refuseLive(ctx, id, 'only cancelled jobs can be restored');
  const { state } = await ctx.admin.job(id);
  ctx.out(ctx.json ? json({ id, restored: true, state }) : `restored ${id}: ${state}\n`);
}

/** `workq jobs remove --name <type> --key <key>`: the waiting job holding an idempotency key deleted. */
async function remove(ctx: CommandContext): Promise<void> {
  const { name, key } = ctx.options;
  if (ctx.positionals.length > 0 || !name || !key) {
    throw new UsageError('workq jobs remove takes --name <type> and --key <idempotency key>, and no job id.');
  }
  if (!(await ctx.admin.removeByKey(name, key))) {
    throw new WorkqError(
      'CONFLICT',
      `No waiting ${name} job holds the key "${key}": none was enqueued with it, or it is running or finished (cancel a running job instead).`,
    );
  }
  ctx.out(ctx.json ? json({ name, key, removed: true }) : `removed the waiting ${name} job with key ${key}\n`);
}

/** A `CONFLICT` saying the job's state, for a move that found it waiting or running already. */
async function refuseLive(ctx: CommandContext, id: string, rule: string): Promise<never> {
  const { state } = await ctx.admin.job(id);
  throw new WorkqError('CONFLICT', `Job ${id} is ${state}: ${rule}.`);
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
export const JOB_COMMANDS = { list, show, retry, promote, restore, remove, cancel, replay } as const;
