import type { AdminApi } from '@workq/sdk';

/** What a command is handed: the server's admin operations, how to print, and its own arguments. */
export interface CommandContext {
  admin: AdminApi;
  /** `--json`: print JSON for scripts instead of tables. */
  json: boolean;
  out(text: string): void;
  /** The arguments after the command's name. */
  positionals: readonly string[];
  options: CommandOptions;
  /**
   * A signal aborted by Ctrl-C or SIGTERM, for a command that runs until
   * then (`workq events`); asking for it is what makes those end the command
   * cleanly instead of the process.
   */
  untilInterrupted(): AbortSignal;
}

/** The options after the command's name, as given (checked by the commands that take them). */
export interface CommandOptions {
  name?: string;
  state?: string;
  limit?: string;
  cursor?: string;
  dead?: boolean;
  concurrency?: string;
  rateLimit?: string;
  groupConcurrency?: string;
  groupOrder?: string;
  key?: string;
  cron?: string;
  payload?: string;
  timezone?: string;
  version?: string;
}

/** A command line the CLI cannot run as given: exit code 2, with the usage text. */
export class UsageError extends Error {}

/** A command that takes no arguments, only options. */
export function noArguments(ctx: CommandContext, command: string): void {
  if (ctx.positionals.length > 0) throw new UsageError(`workq ${command} takes no arguments.`);
}

/** The one argument a command takes, e.g. `<id>` of `workq jobs show`, described as `what` in the error. */
export function oneArgument(ctx: CommandContext, command: string, what: string): string {
  const [value, extra] = ctx.positionals;
  if (!value || extra !== undefined) throw new UsageError(`workq ${command} takes one ${what}.`);
  return value;
}

/** An option's whole number from `min` to `max`; undefined when the option was not given. */
export function wholeNumber(value: string | undefined, option: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === '' || !Number.isInteger(number) || number < min || number > max) {
    throw new UsageError(`--${option} must be a whole number from ${min} to ${max}; got "${value}".`);
  }
  return number;
}
