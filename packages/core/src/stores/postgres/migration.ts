/** One schema change. Append-only: never edit or reorder a released migration, add the next one. */
export interface Migration {
  version: number;
  name: string;
  /**
   * Statements separated by `;` at the end of a line (a `$body$` function body is one), run in order in one
   * transaction with `search_path` set to the store's schema (so names are
   * unqualified).
   */
  sql: string;
}
