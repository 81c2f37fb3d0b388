#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { checkSnapshot, writeSnapshot } from './schemas-command.ts';

const HELP = `workq: tools for workq job catalogs

Usage:
  workq schemas check    [--catalog <module>] [--export <name>] [--snapshot <file>]
  workq schemas snapshot [--catalog <module>] [--export <name>] [--snapshot <file>]

  --catalog   module exporting the catalog (default packages/schemas/src/index.ts)
  --export    the export's name (default jobs)
  --snapshot  the committed snapshot (default packages/schemas/schemas.snapshot.json)
`;

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: {
    catalog: { type: 'string', default: 'packages/schemas/src/index.ts' },
    export: { type: 'string', default: 'jobs' },
    snapshot: { type: 'string', default: 'packages/schemas/schemas.snapshot.json' },
    help: { type: 'boolean' },
  },
});

const options = { catalogPath: values.catalog, exportName: values.export, snapshotPath: values.snapshot };
const [group, command] = positionals;
if (values.help || group !== 'schemas' || (command !== 'check' && command !== 'snapshot')) {
  process.stdout.write(HELP);
  process.exit(values.help ? 0 : 2);
}
const outcome = command === 'check' ? await checkSnapshot(options) : await writeSnapshot(options);
for (const line of outcome.lines) process.stdout.write(`${line}\n`);
process.exit(outcome.exitCode);
