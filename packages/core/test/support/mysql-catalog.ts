import type mysql from 'mysql2/promise';

/** One table of the store: its options, columns in order, indexes and constraints. */
export interface CatalogTable {
  engine: string;
  collation: string;
  /**
   * The columns in order, each as one line read from `information_schema.columns`: name, type, `NULL` or
   * `NOT NULL`, then where set `DEFAULT …`, `AS (…)` with the generated kind, `EXTRA` and `COLLATE …`.
   */
  columns: string[];
  /** Index name: `UNIQUE ` when unique, then its parts in order, each `column` or `column DESC`. */
  indexes: Record<string, string>;
  /** Constraint name: its type (`PRIMARY KEY`, `UNIQUE`, `CHECK …`). */
  constraints: Record<string, string>;
}

/** The store's tables by name without the prefix, as the server's catalog reports them. */
export type MysqlCatalog = Record<string, CatalogTable>;

/**
 * The tables of `database` whose names start with `prefix`, normalised for comparison: the prefix taken off,
 * everything sorted by name (columns by position, index parts by sequence). `skip` names tables (without the
 * prefix) to leave out.
 */
export async function readMysqlCatalog(
  db: mysql.Connection | mysql.Pool,
  database: string,
  prefix: string,
  skip: readonly string[] = [],
): Promise<MysqlCatalog> {
  const like = `${prefix.replaceAll('_', '\\_')}%`;
  const rows = async (sql: string): Promise<mysql.RowDataPacket[]> =>
    (await db.query<mysql.RowDataPacket[]>(sql, [database, like]))[0];
  const bare = (table: unknown): string => String(table).slice(prefix.length);
  const catalog: MysqlCatalog = {};
  const tables = await rows(
    `SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.tables
     WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE ? ORDER BY TABLE_NAME`,
  );
  for (const row of tables) {
    if (skip.includes(bare(row.TABLE_NAME))) continue;
    catalog[bare(row.TABLE_NAME)] = {
      engine: String(row.ENGINE),
      collation: String(row.TABLE_COLLATION),
      columns: [],
      indexes: {},
      constraints: {},
    };
  }
  const columns = await rows(
    `SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA, GENERATION_EXPRESSION,
       COLLATION_NAME FROM information_schema.columns
     WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE ? ORDER BY TABLE_NAME, ORDINAL_POSITION`,
  );
  for (const row of columns) {
    const line = [
      String(row.COLUMN_NAME),
      String(row.COLUMN_TYPE),
      row.IS_NULLABLE === 'YES' ? 'NULL' : 'NOT NULL',
      row.COLUMN_DEFAULT === null ? '' : `DEFAULT ${String(row.COLUMN_DEFAULT)}`,
      row.GENERATION_EXPRESSION ? `AS (${String(row.GENERATION_EXPRESSION)})` : '',
      String(row.EXTRA ?? ''),
      row.COLLATION_NAME === null ? '' : `COLLATE ${String(row.COLLATION_NAME)}`,
    ];
    catalog[bare(row.TABLE_NAME)]?.columns.push(line.filter((part) => part !== '').join(' '));
  }
  const parts = await rows(
    `SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME, COLLATION, SUB_PART FROM information_schema.statistics
     WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE ? ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
  );
  for (const row of parts) {
    const table = catalog[bare(row.TABLE_NAME)];
    if (!table) continue;
    const name = String(row.INDEX_NAME);
    const part = `${String(row.COLUMN_NAME)}${row.SUB_PART === null ? '' : `(${String(row.SUB_PART)})`}${row.COLLATION === 'D' ? ' DESC' : ''}`;
    const head = Number(row.NON_UNIQUE) === 0 ? 'UNIQUE ' : '';
    table.indexes[name] = name in table.indexes ? `${table.indexes[name]}, ${part}` : `${head}${part}`;
  }
  const constraints = await rows(
    `SELECT c.TABLE_NAME, c.CONSTRAINT_NAME, c.CONSTRAINT_TYPE, k.CHECK_CLAUSE
     FROM information_schema.table_constraints AS c
     LEFT JOIN information_schema.check_constraints AS k
       ON k.CONSTRAINT_SCHEMA = c.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = c.CONSTRAINT_NAME
       AND c.CONSTRAINT_TYPE = 'CHECK'
     WHERE c.CONSTRAINT_SCHEMA = ? AND c.TABLE_NAME LIKE ? ORDER BY c.TABLE_NAME, c.CONSTRAINT_NAME`,
  );
  for (const row of constraints) {
    const table = catalog[bare(row.TABLE_NAME)];
    if (!table) continue;
    const check = row.CHECK_CLAUSE === null ? '' : ` ${String(row.CHECK_CLAUSE)}`;
    table.constraints[String(row.CONSTRAINT_NAME)] = `${String(row.CONSTRAINT_TYPE)}${check}`;
  }
  return catalog;
}
