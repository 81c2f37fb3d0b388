/** How the admin commands print: aligned tables and `key: value` blocks for people, JSON for scripts. */

/** A cell: text as is, a date as ISO-8601 (UTC), nothing as `-`. */
export type Cell = string | number | boolean | Date | null | undefined;

function text(cell: Cell): string {
  if (cell === null || cell === undefined || cell === '') return '-';
  if (cell instanceof Date) return cell.toISOString();
  return String(cell);
}

/** Columns padded to their widest cell, two spaces apart, a header row first; `(none)` for no rows. */
export function table(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = [headers.map(String), ...rows.map((row) => row.map(text))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column]?.length ?? 0)));
  return cells
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** `key: value` lines, keys padded to the longest; objects as compact JSON. */
export function fields(entries: readonly [string, unknown][]): string {
  const width = Math.max(...entries.map(([key]) => key.length));
  return entries
    .map(([key, value]) => {
      const shown =
        value !== null && typeof value === 'object' && !(value instanceof Date)
          ? JSON.stringify(value)
          : text(value as Cell);
      return `${`${key}:`.padEnd(width + 1)} ${shown}\n`;
    })
    .join('');
}

/** JSON for scripts: dates as ISO-8601 strings, two-space indent, one trailing newline. */
export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
