import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A freshly initialised PGlite data directory, packed by the build (scripts/pglite-template.mjs) as
 * `dist/pglite-template-<PGlite version>.tar.gz`. A new database loads it instead of running `initdb`,
 * the slowest part of a first start. Only a template made by the PGlite version installed is used: another
 * version's could hold files that version cannot read.
 */
export function pgliteTemplateName(pgliteVersion: string): string {
  return `pglite-template-${pgliteVersion}.tar.gz`;
}

/** The installed PGlite's version, from its package.json (which its exports do not list). */
function installedPgliteVersion(): string | undefined {
  try {
    const manifest = new URL('../package.json', import.meta.resolve('@electric-sql/pglite'));
    return (JSON.parse(readFileSync(fileURLToPath(manifest), 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * `{ loadDataDir }` for `PGlite.create` when a template for the installed PGlite exists (beside the built
 * store, or in the package's `dist/` when it runs from its sources) and `dataDir` (none: in memory) holds
 * no database yet; otherwise `{}`, and PGlite runs `initdb` as it would anyway.
 */
export async function pgliteTemplateFor(dataDir: string | undefined): Promise<{ loadDataDir?: Blob }> {
  if (dataDir !== undefined && existsSync(join(dataDir, 'PG_VERSION'))) return {};
  const version = installedPgliteVersion();
  if (version === undefined) return {};
  for (const candidate of [`./${pgliteTemplateName(version)}`, `../../../dist/${pgliteTemplateName(version)}`]) {
    const file = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(file)) return { loadDataDir: new Blob([await readFile(file)]) };
  }
  return {};
}
