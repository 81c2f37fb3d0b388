import pg from 'pg';

/** The local PostgreSQL server the end-to-end tests use; `WORKQ_TEST_POSTGRES_URL` overrides. */
export const POSTGRES_URL = process.env.WORKQ_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A store URL for one test file: a fresh PostgreSQL schema, dropped by `drop()`. */
export function freshPostgresStore(): { url: string; schema: string; drop: () => Promise<void> } {
  const schema = `workq_e2e_${Math.random().toString(36).slice(2, 10)}`;
  const separator = POSTGRES_URL.includes('?') ? '&' : '?';
  return {
    url: `${POSTGRES_URL}${separator}schema=${schema}`,
    schema,
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/** The stores every end-to-end flow runs on. */
export const E2E_STORES = [
  { label: 'postgres', open: () => freshPostgresStore() },
  { label: 'pglite', open: () => ({ url: 'pglite://memory', schema: 'workq', drop: async () => undefined }) },
] as const;
