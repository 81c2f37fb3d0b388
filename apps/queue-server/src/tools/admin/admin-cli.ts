import { parseArgs } from 'node:util';
import { type CommandContext, UsageError } from './command.ts';
import { JOB_COMMANDS } from './commands/jobs.ts';
import { queuesCommand } from './commands/queues.ts';
import { schedulesCommand } from './commands/schedules.ts';
import { workersCommand } from './commands/workers.ts';
import { adminClient, CallFailed } from './server-client.ts';

export const ADMIN_USAGE = `Operating a queue server (needs a token with the admin scope):
  workq queues                        job types: paused, limits, jobs by state
  workq jobs list [--name <type>] [--state <state>] [--limit <n>] [--cursor <c>]
  workq jobs show <id>                one job: status, payload, result, error, holder
  workq jobs retry <id>               a dead job ready again, with fresh attempts
  workq jobs cancel <id>              a scheduled, ready or active job cancelled
  workq jobs replay <id>              a finished job enqueued again as a new job
  workq workers                       connected workers and the jobs they hold
  workq schedules                     crontab and stored schedules, next and last run

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
}

function run(group: string | undefined, rest: readonly string[], ctx: Omit<CommandContext, 'positionals'>) {
  const [sub, ...args] = rest;
  switch (group) {
    case 'queues':
    case 'workers':
    case 'schedules': {
      if (rest.length > 0) throw new UsageError(`workq ${group} takes no arguments.`);
      const command = { queues: queuesCommand, workers: workersCommand, schedules: schedulesCommand }[group];
      return command({ ...ctx, positionals: [] });
    }
    case 'jobs': {
      if (!sub || !Object.hasOwn(JOB_COMMANDS, sub)) {
        throw new UsageError(`workq jobs needs one of: ${Object.keys(JOB_COMMANDS).join(', ')}.`);
      }
      return JOB_COMMANDS[sub as keyof typeof JOB_COMMANDS]({ ...ctx, positionals: args });
    }
    default:
      throw new UsageError(group ? `Unknown command "${group}".` : 'No command given.');
  }
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
        help: { type: 'boolean', default: false },
      },
    });
    if (values.help) {
      io.out(ADMIN_USAGE);
      return 0;
    }
    const target = {
      url: values.url ?? io.env.WORKQ_URL ?? DEFAULT_URL,
      token: values.token ?? (io.env.WORKQ_TOKEN || undefined),
      timeoutMs: REQUEST_TIMEOUT_MS,
    };
    const { name, state, limit, cursor } = values;
    const [group, ...rest] = positionals;
    await run(group, rest, {
      client: adminClient(target),
      json: values.json,
      out: io.out,
      options: { name, state, limit, cursor },
    });
    return 0;
  } catch (error) {
    if (error instanceof CallFailed) {
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
