import mysql from 'mysql2/promise';

/** The MySQL/MariaDB server the store tests use; `WORKQ_TEST_MYSQL_URL` overrides. */
export const MYSQL_URL = process.env.WORKQ_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

/** The server URL with `database` in place of the test database (and another port, e.g. a proxy's). */
export function withDatabase(database: string, port?: number): string {
  const parsed = new URL(MYSQL_URL);
  parsed.pathname = `/${database}`;
  if (port !== undefined) parsed.port = String(port);
  return parsed.toString();
}

/** Why the server cannot be reached (password masked), or `undefined` when it can. */
export async function mysqlUnreachableReason(): Promise<string | undefined> {
  try {
    const connection = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 5_000 });
    await connection.end();
    return undefined;
  } catch (error) {
    const shown = MYSQL_URL.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
    return `MySQL/MariaDB not reachable at ${shown}: ${(error as Error).message}`;
  }
}
