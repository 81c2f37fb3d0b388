import pg from 'pg';
import { shownUrl, uniqueName } from './names.ts';

/** The PostgreSQL server the tests use; `WORKQ_TEST_POSTGRES_URL` overrides. */
export const POSTGRES_URL = process.env.WORKQ_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A schema of its own on the test server, for one test file: a store URL that names it, and how to drop it. */
export interface FreshPostgresSchema {
  schema: string;
  /** `POSTGRES_URL` with `?schema=<schema>`, which the store takes. */
  url: string;
  drop: () => Promise<void>;
}

/** A new schema name, `<prefix>_<random>`; the store creates the schema when it opens. */
export function freshPostgresSchema(prefix = 'workq_t'): FreshPostgresSchema {
  const schema = uniqueName(prefix);
  const separator = POSTGRES_URL.includes('?') ? '&' : '?';
  return {
    schema,
    url: `${POSTGRES_URL}${separator}schema=${schema}`,
    drop: () => onPostgresServer((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)),
  };
}

let reachability: Promise<string | undefined> | undefined;

/** Why the PostgreSQL server cannot be reached (password masked), or `undefined` when it can. Checked once per test file. */
export function postgresUnreachableReason(): Promise<string | undefined> {
  reachability ??= onPostgresServer(() => Promise.resolve()).then(
    () => undefined,
    (error: unknown) => `PostgreSQL not reachable at ${shownUrl(POSTGRES_URL)}: ${(error as Error).message}`,
  );
  return reachability;
}

async function onPostgresServer(work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}
