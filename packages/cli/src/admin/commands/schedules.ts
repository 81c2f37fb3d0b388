import { WorkqError } from '@workq/sdk';
import { type CommandContext, noArguments, oneArgument, UsageError, wholeNumber } from '../command.ts';
import { fields, json, table } from '../output.ts';

/** `workq schedules [list]`: the crontab's entries and the stored schedules, with next and last run. */
async function list(ctx: CommandContext): Promise<void> {
  noArguments(ctx, 'schedules');
  const schedules = await ctx.admin.schedules();
  if (ctx.json) return ctx.out(json(schedules));
  ctx.out(
    table(
      ['KEY', 'SOURCE', 'JOB', 'CRON', 'TIMEZONE', 'NEXT RUN', 'LAST RUN', 'LAST JOB', 'LAST STATE'],
      schedules.map((s) => [
        s.key,
        s.source,
        s.version === null ? s.name : `${s.name} v${s.version}`,
        s.cron,
        s.timezone,
        s.nextRunAt,
        s.lastRun?.at,
        s.lastRun?.jobId,
        s.lastRun ? (s.lastRun.state ?? 'pruned') : null,
      ]),
    ),
  );
}

/** `--payload`: the job's payload as JSON; `{}` when left out. */
function payloadOption(value: string | undefined): unknown {
  if (value === undefined) return {};
  try {
    return JSON.parse(value);
  } catch (error) {
    throw new UsageError(`--payload must be JSON, e.g. '{"to":"a@example.com"}': ${(error as Error).message}`);
  }
}

/**
 * `workq schedules add --key <key> --cron <expr> --name <type> [--payload <json>] [--timezone <tz>] [--version <n>]`:
 * keeps a schedule in the store (replacing the one with its key); every server's leader enqueues its occurrences.
 */
async function add(ctx: CommandContext): Promise<void> {
  noArguments(ctx, 'schedules add');
  const { key, cron, name, timezone } = ctx.options;
  if (!key || !cron || !name) throw new UsageError('workq schedules add needs --key, --cron and --name.');
  const payload = payloadOption(ctx.options.payload);
  const version = wholeNumber(ctx.options.version, 'version', 1, Number.MAX_SAFE_INTEGER);
  const saved = await ctx.admin.upsertSchedule({ key, cron, name, payload, timezone, version });
  ctx.out(ctx.json ? json(saved) : fields(Object.entries(saved)));
}

/** `workq schedules remove <key>`: removes a stored schedule (crontab entries change only with the crontab). */
async function remove(ctx: CommandContext): Promise<void> {
  const key = oneArgument(ctx, 'schedules remove', 'schedule key');
  if (!(await ctx.admin.removeSchedule(key))) {
    throw new WorkqError('NOT_FOUND', `No stored schedule "${key}" (crontab entries change only with the crontab).`);
  }
  ctx.out(ctx.json ? json({ key, removed: true }) : `removed schedule ${key}\n`);
}

/** The `workq schedules` subcommands, by name; `list` when none is given. */
export const SCHEDULE_COMMANDS = { list, add, remove } as const;
