import { WorkqError } from '../../errors.ts';
import { type Ledger, type Migration, refuseNewerSchema } from '../shared/migration.ts';
import { BASELINE } from './baseline.ts';
import type { SqlClient } from './connection.ts';
import { refuseUnmigratable } from './pre-release-schema.ts';

/**
 * The migrations from the first released schema on, in order: one per released schema change, each ending
 * where the baseline then ends (the baseline is brought up to the same state in the same change, and takes the
 * last migration's version). None yet: nothing has been released, so the baseline alone makes the schema.
 */
export const MIGRATIONS: readonly Migration[] = [];

/** The schema version this code creates, migrates to and runs on. */
export const SCHEMA_VERSION = BASELINE.version;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Validates a schema name and returns it quoted, ready to splice into SQL. */
export function quoteSchema(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new WorkqError(
      'VALIDATION',
      `Invalid PostgreSQL schema name "${schema}": use lowercase letters, digits and _, starting with a letter or _, at most 63 characters.`,
    );
  }
  return `"${schema}"`;
}

/**
 * Brings `schema` to `SCHEMA_VERSION`: a new (or empty) schema gets the baseline, an older one the migrations
 * after its version; one older than every migration (or pre-release) is refused (pre-release-schema.ts). Refuses with
 * `UNSUPPORTED_VERSION` to run on a schema whose `min_server_version` is above `SCHEMA_VERSION` (migrated by a
 * newer server that older ones cannot run beside); a newer schema that allows this server is left as it is.
 * Runs in one transaction under an advisory lock keyed by the schema, so concurrent starts apply each
 * migration once; when everything is applied it changes nothing.
 */
export async function migrate(client: SqlClient, schema: string): Promise<void> {
  const quoted = quoteSchema(schema);
  await client.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`workq.migrate:${schema}`]);
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
    // applied_at is bookkeeping for operators; job times never come from the database clock.
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${quoted}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), min_server_version integer)`,
    );
    const [chain] = await tx.query<{ pre_release: boolean; version: number | null }>(
      `SELECT NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'min_server_version'
        AND NOT attisdropped) AS pre_release, (SELECT max(version) FROM ${quoted}.migrations) AS version`,
      [`${quoted}.migrations`],
    );
    if (chain?.pre_release && chain.version !== null) refuseUnmigratable(schema, chain.version, true);
    const [ledger = { version: 0, minServerVersion: null }] = await tx.query<Ledger>(
      `SELECT coalesce(max(version), 0) AS version, max(min_server_version) AS "minServerVersion" FROM ${quoted}.migrations`,
    );
    refuseNewerSchema(ledger, SCHEMA_VERSION, `The PostgreSQL schema "${schema}"`);
    const { version } = ledger;
    // The first migration starts from the schema before it; nothing older can be upgraded.
    const oldestUpgradable = (MIGRATIONS[0]?.version ?? SCHEMA_VERSION + 1) - 1;
    if (version !== 0 && version < oldestUpgradable) refuseUnmigratable(schema, version, false);
    const pending = version === 0 ? [BASELINE] : MIGRATIONS.filter((migration) => migration.version > version);
    if (pending.length === 0) return;
    await tx.query(`SET LOCAL search_path TO ${quoted}`);
    for (const migration of pending) {
      for (const statement of migration.statements) await tx.query(statement);
      await tx.query(`INSERT INTO ${quoted}.migrations (version, name, min_server_version) VALUES ($1, $2, $3)`, [
        migration.version,
        migration.name,
        migration.minServerVersion,
      ]);
    }
  });
}
