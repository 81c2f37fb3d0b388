import { type Catalog, type JobName, type PayloadInput, parseWith, WorkqError } from '@workq/core';
import type { CronEntry } from '@workq/core/engine';

/** A crontab entry for one job of catalog `C`, its payload typed by that job's current version. */
export type CatalogCronEntry<C extends Catalog> = {
  [N in JobName<C>]: Omit<CronEntry, 'name' | 'payload' | 'version'> & { name: N; payload: PayloadInput<C, N> };
}[JobName<C>];

/**
 * Crontab entries checked against a catalog, for `startServer({ crontab })`:
 * each payload is typed by, and parsed with, its job's current version (a
 * wrong one fails here with `VALIDATION`), the entry is pinned to that
 * version, and the job's catalog `defaults` fill the options it leaves out,
 * as the SDK's enqueue does.
 */
export function defineCrontab<C extends Catalog>(catalog: C, entries: readonly CatalogCronEntry<C>[]): CronEntry[] {
  return entries.map((entry) => {
    const definition = catalog[entry.name];
    if (!definition) throw new WorkqError('UNKNOWN_JOB', `The catalog has no job named "${entry.name}".`);
    parseWith(definition.payload, entry.payload, `Crontab payload of "${entry.name}"`);
    return { ...entry, version: definition.version, options: { ...definition.defaults, ...entry.options } };
  });
}
