#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ADMIN_USAGE, runAdminCli } from './admin/admin-cli.ts';
import { checkSnapshot, writeSnapshot } from './schemas-command.ts';

const SCHEMAS_USAGE = `Checking job catalogs:
  workq schemas check    [--catalog <module>] [--export <name>] [--snapshot <file>]
  workq schemas snapshot [--catalog <module>] [--export <name>] [--snapshot <file>]

  --catalog   module exporting the catalog (default packages/schemas/src/index.ts)
  --export    the export's name (default jobs)
  --snapshot  the committed snapshot (default packages/schemas/schemas.snapshot.json)
(workq schemas list and workq schemas remove ask a running server: see below.)
`;

const HELP = `workq: tools for workq job catalogs and queue servers

${SCHEMAS_USAGE}
${ADMIN_USAGE}`;

async function schemas(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      catalog: { type: 'string', default: 'packages/schemas/src/index.ts' },
      export: { type: 'string', default: 'jobs' },
      snapshot: { type: 'string', default: 'packages/schemas/schemas.snapshot.json' },
      help: { type: 'boolean' },
    },
  });
  const options = { catalogPath: values.catalog, exportName: values.export, snapshotPath: values.snapshot };
  const [command] = positionals;
  if (values.help || (command !== 'check' && command !== 'snapshot')) {
    process.stdout.write(SCHEMAS_USAGE);
    return values.help ? 0 : 2;
  }
  const outcome = command === 'check' ? await checkSnapshot(options) : await writeSnapshot(options);
  for (const line of outcome.lines) process.stdout.write(`${line}\n`);
  return outcome.exitCode;
}

const args = process.argv.slice(2);
if (args.length === 0 || args[0] === '--help' || args[0] === '-h' || args[0] === 'help') {
  process.stdout.write(HELP);
  process.exit(args.length === 0 ? 2 : 0);
}
// `schemas check` and `schemas snapshot` work on files; `schemas list` and `schemas remove` ask a server.
const offline = args[0] === 'schemas' && !(args[1] === 'list' || args[1] === 'remove');
process.exitCode = offline
  ? await schemas(args.slice(1))
  : await runAdminCli(args, {
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
      env: process.env,
      untilInterrupted: () => {
        const interrupted = new AbortController();
        for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => interrupted.abort());
        return interrupted.signal;
      },
    });
