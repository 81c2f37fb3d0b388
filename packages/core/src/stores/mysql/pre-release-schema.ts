import { WorkqError } from '../../errors.ts';
import { BASELINE_VERSION } from './baseline.ts';
import type { Tables } from './tables.ts';

/**
 * The refusal of tables made before the current baseline: by the pre-release migration chain (a ledger of
 * numbered steps without `min_server_version`), or by an earlier baseline, at schema version `version` (0:
 * before it recorded one). Nothing has been released, so no migration leads from them; they lack what the
 * current schema reads (flows' columns among them), and running on them would half work. They are changed in
 * no way, and the message says how to recreate them.
 */
export function preReleaseRefused(t: Tables, version: number): WorkqError {
  return new WorkqError(
    'UNSUPPORTED_VERSION',
    `The workq tables of this database and table prefix (ledger ${t.migrationsName}) were made by a pre-release ` +
      `build of workq, at schema version ${version}, which this version cannot upgrade: no release came before ` +
      `schema version ${BASELINE_VERSION}. Recreate them: drop them (their jobs are lost) ` +
      'or give the store another database or tablePrefix, and start again.',
    { retryable: false },
  );
}
