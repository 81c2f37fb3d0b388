import { WorkqError } from '../../errors.ts';

/**
 * One schema change between released versions, or the baseline, of a SQL store. Append-only: a released
 * migration is never edited or reordered; the next change is a new one, and the baseline changes with it so that
 * a fresh install equals an upgrade (each store's drift test, test/postgres-schema.test.ts and
 * test/mysql-schema.test.ts, holds the two equal).
 */
export interface Migration {
  /** The schema version this migration brings a schema to. */
  version: number;
  name: string;
  /**
   * The oldest server (by the schema version its code knows, `SCHEMA_VERSION`) that may still run on a schema
   * once this migration is applied: the previous migration's value when older servers keep working (a new
   * nullable column, a new index), this migration's own version when they would not (a column they read is
   * dropped, a statement or function they run changes its meaning). A server older than a schema's value
   * refuses to start.
   */
  minServerVersion: number;
  /**
   * Run in order. PostgreSQL runs them in one transaction with `search_path` set to the store's schema (names
   * are unqualified). MySQL commits DDL implicitly, so a crash may leave a migration half applied: there each
   * statement is safe to run again (`IF NOT EXISTS`, or guarded by a catalog check).
   */
  statements: readonly string[];
}

/** What a schema's ledger of applied migrations says. */
export interface Ledger {
  /** The version the schema is at; 0 when the ledger is empty. */
  version: number;
  /** The highest `Migration.minServerVersion` recorded; null when no row sets one (empty or pre-release). */
  minServerVersion: number | null;
}

/**
 * Throws `UNSUPPORTED_VERSION` (not retryable) when the ledger asks for a server newer than one whose code knows
 * `schemaVersion`: a newer server migrated the schema in a way older ones cannot run beside. A newer schema that
 * allows this server passes. `schema` names it for the operator, e.g. `The PostgreSQL schema "workq"`.
 */
export function refuseNewerSchema(ledger: Ledger, schemaVersion: number, schema: string): void {
  if (ledger.minServerVersion === null || ledger.minServerVersion <= schemaVersion) return;
  throw new WorkqError(
    'UNSUPPORTED_VERSION',
    `${schema} is at schema version ${ledger.version} and needs servers of schema version ${ledger.minServerVersion} ` +
      `or later, but this server's @workq/core knows version ${schemaVersion}: upgrade it to the release that ` +
      'migrated the schema (or a later one).',
    { retryable: false },
  );
}
