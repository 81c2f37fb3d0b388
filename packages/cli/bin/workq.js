#!/usr/bin/env node
// Runs the TypeScript entry through tsx, so the command works from a fresh clone without a build step: this package's
// tsconfig (its `paths`) resolves the workspace packages to their sources too (the published bin is built). The entry
// runs in `node --import tsx`, not under tsx's own launcher, which kills a child that does not confirm a relayed
// signal within milliseconds: a command busy when Ctrl-C or SIGTERM came would end without its own shutdown.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const entry = join(here, '..', 'src', 'workq.ts');
const child = spawn(process.execPath, ['--import', loader, entry, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, TSX_TSCONFIG_PATH: join(here, '..', 'tsconfig.json') },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
