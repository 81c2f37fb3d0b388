import mysql from 'mysql2/promise';
import { shownUrl, uniqueName } from './names.ts';

/** The MySQL/MariaDB server the tests use; `WORKQ_TEST_MYSQL_URL` overrides (`mariadb://` too). */
export const MYSQL_URL = process.env.WORKQ_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

/** `MYSQL_URL` with `database` in place of the test database, and another port if given (e.g. a proxy's). */
export function mysqlUrl(database: string, port?: number): string {
  const parsed = new URL(MYSQL_URL);
  parsed.pathname = `/${database}`;
  if (port !== undefined) parsed.port = String(port);
  return parsed.toString();
}

/** A database of its own on the test server, for one test file: its URL, and how to drop it. */
export interface FreshMysqlDatabase {
  database: string;
  url: string;
  drop: () => Promise<void>;
}

/** Creates a database `<prefix>_<random>` (the store needs it to exist) and resolves once it does. */
export async function freshMysqlDatabase(prefix = 'workq_t'): Promise<FreshMysqlDatabase> {
  const database = uniqueName(prefix);
  await onMysqlServer((connection) => connection.query(`CREATE DATABASE \`${database}\``));
  return {
    database,
    url: mysqlUrl(database),
    drop: () => onMysqlServer((connection) => connection.query(`DROP DATABASE IF EXISTS \`${database}\``)),
  };
}

let reachability: Promise<string | undefined> | undefined;

/** Why the MySQL/MariaDB server cannot be reached (password masked), or `undefined` when it can. Checked once per test file. */
export function mysqlUnreachableReason(): Promise<string | undefined> {
  reachability ??= onMysqlServer(() => Promise.resolve()).then(
    () => undefined,
    (error: unknown) => `MySQL/MariaDB not reachable at ${shownUrl(MYSQL_URL)}: ${(error as Error).message}`,
  );
  return reachability;
}

async function onMysqlServer(work: (connection: mysql.Connection) => Promise<unknown>): Promise<void> {
  // The driver reads any scheme as MySQL's; the store accepts `mariadb://` too.
  const connection = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 5_000 });
  try {
    await work(connection);
  } finally {
    await connection.end();
  }
}
