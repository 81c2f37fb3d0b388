import type { PoolConnection, RowDataPacket } from 'mysql2/promise';

/** Whether the store's database has `table` (a name as the catalog has it, unescaped). */
export async function hasTable(c: PoolConnection, table: string): Promise<boolean> {
  const [rows] = await c.query<RowDataPacket[]>(
    'SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?',
    [table],
  );
  return rows.length > 0;
}

/** Whether `table` of the store's database has `column`. */
export async function hasColumn(c: PoolConnection, table: string, column: string): Promise<boolean> {
  const [rows] = await c.query<RowDataPacket[]>(
    'SELECT 1 FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?',
    [table, column],
  );
  return rows.length > 0;
}
