import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Catalog, checkCompatibility, type SchemaSnapshot, snapshotCatalog } from '@workq/core';

export interface SchemasCommandOptions {
  /** Module exporting the catalog. */
  catalogPath: string;
  /** Name of the export holding the catalog. @defaultValue 'jobs' */
  exportName?: string;
  snapshotPath: string;
}

/** The outcome of a command: what to print and the process exit code. */
export interface CommandOutcome {
  exitCode: number;
  lines: string[];
}

const TYPESCRIPT_FILE = /\.[cm]?tsx?$/;

/**
 * Imports the catalog module. Plain Node cannot import TypeScript, so for a
 * `.ts` catalog it registers tsx's loader when the project has tsx installed
 * (an optional peer dependency), and otherwise says how to proceed.
 */
async function importCatalogModule(path: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(resolve(path)).href;
  try {
    return await import(url);
  } catch (error) {
    const unknownExtension = error instanceof Error && 'code' in error && error.code === 'ERR_UNKNOWN_FILE_EXTENSION';
    if (!unknownExtension || !TYPESCRIPT_FILE.test(path)) throw error;
  }
  const tsx = await import('tsx/esm/api').catch(() => undefined);
  if (!tsx) {
    throw new Error(
      `${path} is TypeScript, which Node cannot import by itself: install tsx beside workq (npm install -D tsx), or point --catalog at the compiled JavaScript.`,
    );
  }
  tsx.register();
  return import(url);
}

async function loadCatalog(options: SchemasCommandOptions): Promise<Catalog> {
  const module = await importCatalogModule(options.catalogPath);
  const catalog = module[options.exportName ?? 'jobs'];
  if (!catalog || typeof catalog !== 'object') {
    throw new Error(`${options.catalogPath} has no export "${options.exportName ?? 'jobs'}" holding a catalog.`);
  }
  return catalog as Catalog;
}

/** `workq schemas snapshot`: records the catalog's payload schemas for later checks. */
export async function writeSnapshot(options: SchemasCommandOptions): Promise<CommandOutcome> {
  const snapshot = snapshotCatalog(await loadCatalog(options));
  await writeFile(resolve(options.snapshotPath), `${JSON.stringify(snapshot, null, 2)}\n`);
  const count = Object.values(snapshot.jobs).reduce((n, job) => n + Object.keys(job.versions).length, 0);
  return {
    exitCode: 0,
    lines: [`wrote ${options.snapshotPath}: ${Object.keys(snapshot.jobs).length} job types, ${count} versions`],
  };
}

/** `workq schemas check`: fails, naming each problem, when the catalog breaks what the snapshot recorded. */
export async function checkSnapshot(options: SchemasCommandOptions): Promise<CommandOutcome> {
  let catalog: Catalog;
  try {
    catalog = await loadCatalog(options);
  } catch (error) {
    return { exitCode: 1, lines: [`✗ the catalog does not load: ${(error as Error).message}`] };
  }
  let snapshot: SchemaSnapshot;
  try {
    snapshot = JSON.parse(await readFile(resolve(options.snapshotPath), 'utf8')) as SchemaSnapshot;
  } catch (error) {
    return {
      exitCode: 1,
      lines: [
        `✗ cannot read the snapshot ${options.snapshotPath} (${(error as Error).message}); write one with "workq schemas snapshot".`,
      ],
    };
  }
  const problems = checkCompatibility(catalog, snapshot);
  if (problems.length === 0) {
    return { exitCode: 0, lines: [`✓ the catalog is compatible with ${options.snapshotPath}`] };
  }
  return {
    exitCode: 1,
    lines: [
      `✗ ${problems.length} breaking change(s) against ${options.snapshotPath}:`,
      ...problems.map((p) => `  - ${p.job} v${p.version}: ${p.message}`),
    ],
  };
}
