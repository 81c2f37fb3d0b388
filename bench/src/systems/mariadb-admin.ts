import mysql, { type RowDataPacket } from 'mysql2/promise';
import { SERVICES } from '../config.ts';

/** Runs one statement on a short-lived connection to the local MariaDB (set-up, counting, clean-up). */
export async function mariadbQuery(sql: string, values: unknown[] = []): Promise<RowDataPacket[]> {
  const connection = await mysql.createConnection(SERVICES.mysqlUrl);
  try {
    const [rows] = await connection.query<RowDataPacket[]>(sql, values);
    return rows;
  } finally {
    await connection.end();
  }
}

/** Makes the database `name` (a name from `schemaName`) and returns the store URL for it. */
export async function createDatabase(name: string): Promise<string> {
  await mariadbQuery(`CREATE DATABASE \`${name}\``);
  return `${SERVICES.mysqlUrl}/${name}`;
}

export async function dropDatabase(name: string): Promise<void> {
  await mariadbQuery(`DROP DATABASE IF EXISTS \`${name}\``);
}
