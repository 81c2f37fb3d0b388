import type { CommandContext } from '../command.ts';
import { json, table } from '../output.ts';

/** `workq schedules`: the crontab's entries and the stored schedules, with next and last run. */
export async function schedulesCommand(ctx: CommandContext): Promise<void> {
  const schedules = await ctx.client.schedules();
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
