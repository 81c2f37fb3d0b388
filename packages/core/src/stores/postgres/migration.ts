/**
 * One schema change between released versions, or the baseline. Append-only: a released migration is never
 * edited or reordered; the next change is a new one, and the baseline changes with it so that a fresh install
 * equals an upgrade (the drift test, test/postgres-schema.test.ts, holds the two equal).
 */
export interface Migration {
  /** The schema version this migration brings a schema to. */
  version: number;
  name: string;
  /**
   * The oldest server (by the schema version its code knows, `SCHEMA_VERSION`) that may still run on a schema
   * once this migration is applied: the previous migration's value when older servers keep working (a new
   * nullable column, a new index), this migration's own version when they would not (a column they read is
   * dropped, a function they call changes its answer). A server older than a schema's value refuses to start.
   */
  minServerVersion: number;
  /** Run in order, in one transaction, with `search_path` set to the store's schema (names are unqualified). */
  statements: readonly string[];
}
