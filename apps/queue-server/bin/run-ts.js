// Runs a TypeScript entry of this package through tsx, so its commands work from a fresh clone without a build step.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Runs `src/<entry>` with the process's arguments, forwarding signals and the exit code. */
export function runTs(entry) {
  const here = dirname(fileURLToPath(import.meta.url));
  const tsx = createRequire(import.meta.url).resolve('tsx/cli');
  const child = spawn(process.execPath, [tsx, join(here, '..', 'src', entry), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
