import { parseArgs } from 'node:util';
import { createClient, isWorkqError } from '@workq/sdk';
import { type CommandContext, noArguments, UsageError } from './command.ts';
import { eventsCommand } from './commands/events.ts';
import { FLOW_COMMANDS } from './commands/flow-control.ts';
import { JOB_COMMANDS } from './commands/jobs.ts';
import { queuesCommand } from './commands/queues.ts';
import { SCHEDULE_COMMANDS } from './commands/schedules.ts';
import { SCHEMA_COMMANDS } from './commands/schemas.ts';
import { workersCommand } from './commands/workers.ts';

export const ADMIN_USAGE = `Operating a queue server (needs a token with the admin scope):
  workq queues                        job types: paused, held, limits, jobs by state
  workq pause <type>                  stop claims of a job type on every server
  workq resume <type>                 end a pause
  workq limits <type> [--concurrency <n>|none] [--rate-limit <max>/<perMs>|none]
                      [--group-concurrency <n>|none] [--group-order strict|none]
                                      change limits (none clears one); with no option, show them
  workq jobs list [--name <type>] [--state <state>] [--limit <n>] [--cursor <c>]
  workq jobs show <id>                one job: status, payload, result, error, holder
  workq jobs retry <id>               a dead or completed job run again in place, fresh attempts
  workq jobs retry --dead --name <type>   every dead job of a type ready again
  workq jobs promote <id>             a scheduled job ready now
  workq jobs restore <id>             a cancelled job that never started waiting again
  workq jobs remove --name <type> --key <key>
                                      the waiting job with that idempotency key deleted
  workq jobs cancel <id>              a scheduled, ready or active job cancelled
  workq jobs replay <id>              a finished job enqueued again as a new job
  workq workers                       connected workers and the jobs they hold
  workq schedules                     crontab and stored schedules, next and last run
  workq schedules add --key <key> --cron <expr> --name <type> [--payload <json>]
                      [--timezone <tz>] [--version <n>]
                                      keep a schedule in the store (replaces its key's)
  workq schedules remove <key>        remove a stored schedule
  workq schemas list [--name <type>]  registered payload schema versions
  workq schemas remove <type> <version>
                                      remove a registered schema version on every server
                                      (it can be registered again; its jobs stay)
  workq events [<type>]               live job events, one a line, until Ctrl-C

  --url <url>      the queue server [WORKQ_URL] (default http://127.0.0.1:4000)
  --token <token>  a token with the admin scope [WORKQ_TOKEN]
  --json           JSON for scripts instead of tables
Exit codes: 0 done, 1 the operation failed (its error code and message on stderr), 2 usage.
`;

const DEFAULT_URL = 'http://127.0.0.1:4000';
const REQUEST_TIMEOUT_MS = 30_000;

/** Where a command's output goes; the process's streams, or a test's. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
  /** A signal aborted by Ctrl-C or SIGTERM from now on (see `CommandContext.untilInterrupted`). */
  untilInterrupted(): AbortSignal;
}

type Command = (ctx: CommandContext) => Promise<void>;

/** Commands with subcommands, each with the one run when none is given (if any). */
const GROUPS: Record<string, { commands: Record<string, Command>; otherwise?: Command }> = {
  jobs: { commands: JOB_COMMANDS },
  schedules: { commands: SCHEDULE_COMMANDS, otherwise: SCHEDULE_COMMANDS.list },
  schemas: { commands: SCHEMA_COMMANDS },
};

const COMMANDS: Record<string, Command> = {
  queues: async (ctx) => {
    noArguments(ctx, 'queues');
    await queuesCommand(ctx);
  },
  workers: async (ctx) => {
    noArguments(ctx, 'workers');
    await workersCommand(ctx);
  },
  events: eventsCommand,
  ...FLOW_COMMANDS,
};

function run(group: string | undefined, rest: readonly string[], ctx: Omit<CommandContext, 'positionals'>) {
  if (group && Object.hasOwn(COMMANDS, group)) return (COMMANDS[group] as Command)({ ...ctx, positionals: rest });
  const found = group && Object.hasOwn(GROUPS, group) ? GROUPS[group] : undefined;
  if (!found) throw new UsageError(group ? `Unknown command "${group}".` : 'No command given.');
  const [sub, ...args] = rest;
  if (sub && Object.hasOwn(found.commands, sub)) return (found.commands[sub] as Command)({ ...ctx, positionals: args });
  if (!sub && found.otherwise) return found.otherwise({ ...ctx, positionals: [] });
  throw new UsageError(`workq ${group} needs one of: ${Object.keys(found.commands).join(', ')}.`);
}

/** Runs one admin command line; resolves to the process exit code. */
export async function runAdminCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        token: { type: 'string' },
        json: { type: 'boolean', default: false },
        name: { type: 'string' },
        state: { type: 'string' },
        limit: { type: 'string' },
        cursor: { type: 'string' },
        dead: { type: 'boolean' },
        concurrency: { type: 'string' },
        'rate-limit': { type: 'string' },
        'group-concurrency': { type: 'string' },
        'group-order': { type: 'string' },
        key: { type: 'string' },
        cron: { type: 'string' },
        payload: { type: 'string' },
        timezone: { type: 'string' },
        version: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    });
    if (values.help) {
      io.out(ADMIN_USAGE);
      return 0;
    }
    // No catalog: the admin operations take any job type the server knows.
    const client = createClient({
      url: values.url ?? io.env.WORKQ_URL ?? DEFAULT_URL,
      jobs: {},
      token: values.token ?? (io.env.WORKQ_TOKEN || undefined),
      timeoutMs: REQUEST_TIMEOUT_MS,
      logger: false,
    });
    const {
      url,
      token,
      json,
      help,
      'rate-limit': rateLimit,
      'group-concurrency': groupConcurrency,
      'group-order': groupOrder,
      ...options
    } = values;
    const [group, ...rest] = positionals;
    await run(group, rest, {
      admin: client.admin,
      json: values.json,
      out: io.out,
      options: { ...options, rateLimit, groupConcurrency, groupOrder },
      untilInterrupted: io.untilInterrupted,
    });
    return 0;
  } catch (error) {
    if (isWorkqError(error)) {
      io.err(`workq: ${error.code}: ${error.message}\n`);
      return 1;
    }
    if (error instanceof UsageError || (error instanceof TypeError && 'code' in error)) {
      io.err(`workq: ${error.message}\n\n${ADMIN_USAGE}`);
      return 2;
    }
    throw error;
  }
}
