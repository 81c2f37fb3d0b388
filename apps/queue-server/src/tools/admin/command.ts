import type { AdminClient } from './server-client.ts';

/** What a command is handed: the server, how to print, and its own arguments. */
export interface CommandContext {
  client: AdminClient;
  /** `--json`: print JSON for scripts instead of tables. */
  json: boolean;
  out(text: string): void;
  /** The arguments after the command's name. */
  positionals: readonly string[];
  options: CommandOptions;
}

export interface CommandOptions {
  name?: string;
  state?: string;
  limit?: string;
  cursor?: string;
}

/** A command line the CLI cannot run as given: exit code 2, with the usage text. */
export class UsageError extends Error {}

/** The one `<id>` argument a job command takes. */
export function jobIdArgument(ctx: CommandContext, command: string): string {
  const [id, extra] = ctx.positionals;
  if (!id || extra !== undefined) throw new UsageError(`workq jobs ${command} takes one job id.`);
  return id;
}
