import type { JobEvent, ResyncEvent } from '@workq/core';
import { type CommandContext, UsageError } from '../command.ts';

/** One event on one line: time, type, job type and version, job id, then what the event carries. */
function eventLine(event: JobEvent | ResyncEvent): string {
  if (event.type === 'resync') return `${event.at.toISOString()}  resync  events were missed\n`;
  const parts = [event.at.toISOString(), event.type, `${event.name} v${event.version}`, event.id];
  if (event.attempt !== undefined) parts.push(`attempt ${event.attempt}`);
  if (event.progress !== undefined) parts.push(`progress ${event.progress}`);
  if (event.error !== undefined) parts.push(`error ${JSON.stringify(event.error.message)}`);
  if (event.willRetry !== undefined) parts.push(event.willRetry ? 'will retry' : 'no retry');
  if (event.result !== undefined) parts.push(`result ${JSON.stringify(event.result)}`);
  return `${parts.join('  ')}\n`;
}

/**
 * `workq events [<type>]`: live job events (of one job type, or every type
 * the token may see), one line each (`--json`: one JSON object a line), until
 * Ctrl-C or SIGTERM. A refused or broken stream fails with its code.
 */
export async function eventsCommand(ctx: CommandContext): Promise<void> {
  const [name, extra] = ctx.positionals;
  if (extra !== undefined) throw new UsageError('workq events takes at most one job type.');
  const signal = ctx.untilInterrupted();
  for await (const event of ctx.admin.events(name, { signal })) {
    ctx.out(ctx.json ? `${JSON.stringify(event)}\n` : eventLine(event));
  }
}
