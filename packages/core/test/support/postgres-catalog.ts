/**
 * What a PostgreSQL schema holds, read from the catalog and normalised so that two schemas built the same way
 * compare equal whatever they are named: tables with their columns in order (type, collation, nullability,
 * default, generation), indexes and constraints with their definitions, functions with `pg_get_functiondef`,
 * triggers, and types of the schema's own. The schema's name is written `$SCHEMA` wherever the catalog spells
 * it (qualified names, a function's `SET search_path`). Tables named in `skipTables` (bookkeeping) are left out
 * with their indexes and constraints.
 */
export interface PostgresCatalog {
  tables: Record<string, { kind: string; columns: ColumnEntry[] }>;
  indexes: Record<string, string>;
  constraints: Record<string, string>;
  functions: Record<string, string>;
  triggers: Record<string, string>;
  types: Record<string, string>;
}

interface ColumnEntry {
  name: string;
  type: string;
  collation: string | null;
  notNull: boolean;
  default: string | null;
  generated: string;
  identity: string;
}

/** Runs one statement with parameters and resolves to its rows (node-postgres' pool and PGlite alike). */
export type CatalogQuery = <Row>(text: string, params: unknown[]) => Promise<Row[]>;

const COLUMNS = `
SELECT c.relname AS table, c.relkind AS kind, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
  CASE WHEN a.attcollation <> t.typcollation THEN co.collname END AS collation, a.attnotnull AS "notNull",
  pg_get_expr(d.adbin, d.adrelid) AS default, a.attgenerated AS generated, a.attidentity AS identity
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type AS t ON t.oid = a.atttypid
LEFT JOIN pg_collation AS co ON co.oid = a.attcollation
LEFT JOIN pg_attrdef AS d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND NOT c.relname = ANY($2::text[])
ORDER BY c.relname, a.attnum`;

const INDEXES = `
SELECT i.tablename || '.' || i.indexname AS name, i.indexdef AS definition FROM pg_indexes AS i
WHERE i.schemaname = $1 AND NOT i.tablename = ANY($2::text[])`;

const CONSTRAINTS = `
SELECT coalesce(r.relname || '.', '') || c.conname AS name, c.contype::text || ' ' || pg_get_constraintdef(c.oid) AS definition
FROM pg_constraint AS c
JOIN pg_namespace AS n ON n.oid = c.connamespace
LEFT JOIN pg_class AS r ON r.oid = c.conrelid
WHERE n.nspname = $1 AND c.contype <> 'n' AND NOT coalesce(r.relname, '') = ANY($2::text[])`;

const FUNCTIONS = `
SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS name, pg_get_functiondef(p.oid) AS definition
FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = $1 AND p.prokind IN ('f', 'p')`;

const TRIGGERS = `
SELECT c.relname || '.' || t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND NOT t.tgisinternal AND NOT c.relname = ANY($2::text[])`;

/** Types of the schema's own: enums, domains, composites and ranges, not the row types of its tables. */
const TYPES = `
SELECT t.typname AS name, t.typtype::text || ' ' || format_type(t.oid, NULL) || coalesce(' ' || (
    SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum AS e WHERE e.enumtypid = t.oid), '') AS definition
FROM pg_type AS t JOIN pg_namespace AS n ON n.oid = t.typnamespace
LEFT JOIN pg_class AS c ON c.oid = t.typrelid
WHERE n.nspname = $1 AND (t.typrelid = 0 OR c.relkind = 'c') AND t.typcategory <> 'A'`;

/** Reads `schema`'s catalog through `query`; see `PostgresCatalog`. */
export async function readPostgresCatalog(
  query: CatalogQuery,
  schema: string,
  skipTables: readonly string[] = [],
): Promise<PostgresCatalog> {
  const params = [schema, [...skipTables]];
  const named = async (text: string, bound = params) => {
    const rows = await query<{ name: string; definition: string }>(text, bound);
    return sorted(Object.fromEntries(rows.map((row) => [row.name, unschema(row.definition, schema)])));
  };
  const tables: PostgresCatalog['tables'] = {};
  for (const { table, kind, ...column } of await query<ColumnEntry & { table: string; kind: string }>(
    COLUMNS,
    params,
  )) {
    tables[table] ??= { kind, columns: [] };
    tables[table].columns.push({
      ...column,
      default: column.default === null ? null : unschema(column.default, schema),
    });
  }
  return {
    tables: sorted(tables),
    indexes: await named(INDEXES),
    constraints: await named(CONSTRAINTS),
    functions: await named(FUNCTIONS, [schema]),
    triggers: await named(TRIGGERS),
    types: await named(TYPES, [schema]),
  };
}

function unschema(text: string, schema: string): string {
  return text.split(schema).join('$SCHEMA');
}

function sorted<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
