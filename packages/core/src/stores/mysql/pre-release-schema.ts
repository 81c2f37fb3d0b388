import type { PoolConnection } from 'mysql2/promise';
import { WorkqError } from '../../errors.ts';
import { GROUP_LISTING_COLUMNS, GROUP_LISTING_INDEX, GROUP_STATE_COLUMN } from './baseline.ts';
import { hasColumn, hasIndex } from './catalog.ts';
import type { Tables } from './tables.ts';

/**
 * Tables made before the baseline: their ledger (`<prefix>migrations`) has no `min_server_version` set on any
 * row, and its rows are the pre-release chain's steps (1 to 17). The chain's last step left the baseline's
 * tables, plus `queue_groups`, which no build since step 16 reads or writes, and less the group listing index
 * and its `group_state` column: that table is dropped, the column and index added, and the tables are otherwise
 * taken over as they stand, their ledger
 * rows kept, so servers of that build still start on them
 * during a rolling deploy. Tables of an earlier step are not the baseline's and are never taken for it: their
 * owner recreates them.
 */
const LAST_PRE_RELEASE_VERSION = 17;

/** The oldest server that may run on tables taken over: the first that checks. */
const TAKEN_OVER_MIN_SERVER_VERSION = 17;

/**
 * Takes over pre-release tables whose ledger reached `version` (see above), or throws `UNSUPPORTED_VERSION`
 * saying how to recreate them, having changed nothing. Each step is safe to run again: a start that crashed
 * part way leaves `min_server_version` unset, and the next takes the tables over again.
 */
export async function takeOverPreRelease(c: PoolConnection, t: Tables, version: number): Promise<void> {
  if (version !== LAST_PRE_RELEASE_VERSION) throw preReleaseRefused(t, version);
  if (!(await hasColumn(c, t.migrationsName, 'min_server_version'))) {
    await c.query(`ALTER TABLE ${t.migrations} ADD COLUMN min_server_version INT NULL`);
  }
  await c.query(`DROP TABLE IF EXISTS ${t.queueGroups}`);
  // MySQL 8 has no `ADD COLUMN IF NOT EXISTS` or `CREATE INDEX IF NOT EXISTS`.
  if (!(await hasColumn(c, t.jobsName, 'group_state'))) {
    await c.query(`ALTER TABLE ${t.jobs} ADD COLUMN ${GROUP_STATE_COLUMN}`);
  }
  if (!(await hasIndex(c, t.jobsName, GROUP_LISTING_INDEX))) {
    await c.query(`CREATE INDEX ${GROUP_LISTING_INDEX} ON ${t.jobs} ${GROUP_LISTING_COLUMNS}`);
  }
  await c.query(`UPDATE ${t.migrations} SET min_server_version = ? WHERE version = ?`, [
    TAKEN_OVER_MIN_SERVER_VERSION,
    LAST_PRE_RELEASE_VERSION,
  ]);
}

/** The refusal of tables an older pre-release build made, at chain step `version` (0: before it recorded one). */
export function preReleaseRefused(t: Tables, version: number): WorkqError {
  return new WorkqError(
    'UNSUPPORTED_VERSION',
    `The workq tables of this database and table prefix (ledger ${t.migrationsName}) were made by a pre-release ` +
      `build of workq, at schema version ${version}, which this version cannot upgrade: only the last pre-release ` +
      `schema (version ${LAST_PRE_RELEASE_VERSION}) is taken over. Recreate them: drop them (their jobs are lost) ` +
      'or give the store another database or tablePrefix, and start again.',
    { retryable: false },
  );
}
