// Runs a TypeScript entry of this package through tsx, so its commands work from a fresh clone without a build step:
// this package's tsconfig (its `paths`) resolves the workspace packages to their sources too (the published bin is
// built).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Runs `src/<entry>` with the process's arguments, forwarding signals and the exit code. The entry runs in
 * `node --import tsx`, not under tsx's own launcher: that launcher relays a signal and kills a child that does not
 * confirm it within milliseconds, so on a loaded machine a SIGTERM could end the server before it shut down.
 */
export function runTs(entry) {
  const here = dirname(fileURLToPath(import.meta.url));
  const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const child = spawn(
    process.execPath,
    ['--import', loader, join(here, '..', 'src', entry), ...process.argv.slice(2)],
    { stdio: 'inherit', env: { ...process.env, TSX_TSCONFIG_PATH: join(here, '..', 'tsconfig.json') } },
  );
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
