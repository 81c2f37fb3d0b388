import type { CommandContext } from '../command.ts';
import { json, table } from '../output.ts';

/** `workq workers`: each connected worker, the job types and versions it reads, and the jobs it holds. */
export async function workersCommand(ctx: CommandContext): Promise<void> {
  const workers = await ctx.admin.workers();
  if (ctx.json) return ctx.out(json(workers));
  ctx.out(
    table(
      ['ID', 'HOST', 'PID', 'JOBS', 'VERSIONS', 'STARTED', 'LAST SEEN', 'ACTIVE'],
      workers.map((w) => [
        w.id,
        w.host,
        w.pid,
        w.names.join(','),
        w.versions.join(','),
        w.startedAt,
        w.lastSeenAt,
        w.activeJobIds.length === 0 ? '0' : `${w.activeJobIds.length} (${w.activeJobIds.join(',')})`,
      ]),
    ),
  );
}
