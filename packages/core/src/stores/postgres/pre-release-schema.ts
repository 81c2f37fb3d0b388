import { WorkqError } from '../../errors.ts';
import { BASELINE, GROUP_LIST_INDEX } from './baseline.ts';
import type { SqlQueryable } from './connection.ts';
import { CLAIM_JOBS_UNLESS_HELD } from './sql/claim-jobs-unless-held.ts';

/**
 * Schemas made before the baseline: their `migrations` table has no `min_server_version`, and its rows are the
 * pre-release chain's (versions 1 to 24). The last of the chain ends where the baseline does, but for two claim
 * functions no server of it calls any more (`claim_under_limits` replaced them in version 23), which are dropped,
 * and the group listing index and the plain claim that checks the settings (`claim_jobs_unless_held`), which are
 * added; the schema is taken over as it stands otherwise, its rows kept, so
 * servers of that build can still start on it during a rolling deploy. An older one cannot be: its owner
 * recreates it.
 */
const LAST_PRE_RELEASE_VERSION = 24;
const SUPERSEDED_FUNCTIONS = [
  'claim_limited_jobs(text, timestamptz, integer, integer, integer, text, text, bigint)',
  'group_heads_after(text, timestamptz, integer, integer, text, text, integer)',
];

/**
 * Takes over a pre-release schema at `version` (see above), or throws `UNSUPPORTED_VERSION` saying how to
 * recreate it. Runs in the migration's transaction, so a refusal changes nothing.
 */
export async function takeOverPreRelease(
  tx: SqlQueryable,
  schema: string,
  quoted: string,
  version: number,
): Promise<void> {
  if (version !== LAST_PRE_RELEASE_VERSION) {
    throw new WorkqError(
      'UNSUPPORTED_VERSION',
      `The PostgreSQL schema "${schema}" was made by a pre-release build of workq (schema version ${version}), ` +
        `which this version cannot upgrade: only the last pre-release schema (version ${LAST_PRE_RELEASE_VERSION}) is taken over. ` +
        `Recreate it: drop it (DROP SCHEMA "${schema}" CASCADE; its jobs are lost), or give the store another schema ` +
        '(or, on PGlite, a new data directory), and start again.',
      { retryable: false },
    );
  }
  for (const signature of SUPERSEDED_FUNCTIONS) await tx.query(`DROP FUNCTION IF EXISTS ${quoted}.${signature}`);
  // Built in the migration's transaction (not CONCURRENTLY), as the baseline builds it.
  await tx.query(`SET LOCAL search_path TO ${quoted}`);
  await tx.query(GROUP_LIST_INDEX);
  await tx.query(CLAIM_JOBS_UNLESS_HELD);
  await tx.query(`ALTER TABLE ${quoted}.migrations ADD COLUMN min_server_version integer`);
  await tx.query(`UPDATE ${quoted}.migrations SET min_server_version = $1 WHERE version = $2`, [
    BASELINE.minServerVersion,
    LAST_PRE_RELEASE_VERSION,
  ]);
}
