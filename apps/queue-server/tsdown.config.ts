import { copyFileSync, cpSync, existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'tsdown';

/** The dashboard's build (`apps/dashboard`, built first by turbo), shipped in this package as `dist/ui/`. */
const DASHBOARD_BUILD = fileURLToPath(new URL('../dashboard/dist/', import.meta.url));
const UI = fileURLToPath(new URL('./dist/ui/', import.meta.url));

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    router: 'src/router/index.ts',
    cli: 'src/cli.ts',
  },
  format: 'esm',
  platform: 'node',
  target: 'node20',
  fixedExtension: false,
  dts: true,
  sourcemap: true,
  // Everything but the dashboard, which installDashboard replaces in place: a server running from the sources
  // (the tests') serves dist/ui while this package builds.
  clean: ['dist/*', '!dist/ui'],
  hooks: {
    'build:done': installDashboard,
  },
});

/**
 * Puts the dashboard's build in `dist/ui/` with no moment in which a server reading it finds no page: the files
 * under `assets/` are named by their content's hash, so the new ones go in beside the old; `index.html`, which
 * names them, is swapped in by a rename; only then are the files the new build no longer has removed.
 */
function installDashboard(): void {
  if (!existsSync(join(DASHBOARD_BUILD, 'index.html'))) {
    throw new Error('The dashboard is not built: run `pnpm build` (turbo builds @workq/dashboard first).');
  }
  cpSync(DASHBOARD_BUILD, UI, { recursive: true, filter: (path) => basename(path) !== 'index.html' });
  copyFileSync(join(DASHBOARD_BUILD, 'index.html'), join(UI, 'index.html.next'));
  renameSync(join(UI, 'index.html.next'), join(UI, 'index.html'));
  const built = new Set(filesUnder(DASHBOARD_BUILD));
  for (const file of filesUnder(UI)) if (!built.has(file)) rmSync(join(UI, file));
}

/** The paths of the files below `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}
