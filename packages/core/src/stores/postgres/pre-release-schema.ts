import { WorkqError } from '../../errors.ts';

/**
 * Throws `UNSUPPORTED_VERSION` (not retryable) for a schema this code cannot bring to its version: one made by a
 * pre-release build (its `migrations` table has no `min_server_version`), or by a build whose baseline was older
 * than this one's, with no migration from it (nothing has been released, so the baseline changes in place: the
 * flows' columns and functions, for one). The message says how to recreate it. Runs in the migration's
 * transaction before any change, so a refusal leaves the schema as it was.
 */
export function refuseUnmigratable(schema: string, version: number, preRelease: boolean): never {
  const made = preRelease ? 'a pre-release build of workq' : 'an earlier development build of workq';
  throw new WorkqError(
    'UNSUPPORTED_VERSION',
    `The PostgreSQL schema "${schema}" was made by ${made} (schema version ${version}), which this version cannot ` +
      'upgrade. Recreate it: drop it (DROP SCHEMA "' +
      `${schema}" CASCADE; its jobs are lost), or give the store another schema (or, on PGlite, a new data ` +
      'directory), and start again.',
    { retryable: false },
  );
}
