import pg from 'pg';
import { SERVICES } from '../config.ts';

/** Runs one statement on a short-lived connection (schema set-up, seeding, counting). */
export async function pgQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: SERVICES.postgresUrl });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await pgQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** Schema names are lowercase and unique per run, system and scenario. */
export function schemaName(prefix: string, tag: string): string {
  return `${prefix}_${tag}`
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 63);
}
