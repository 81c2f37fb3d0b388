import { pgQuery } from './pg-admin.ts';

/**
 * Bulk-fills workq's own PostgreSQL `jobs` table with one `INSERT … SELECT
 * generate_series`, row for row what `insertJobs` writes (same columns, same
 * defaults as the engine's, UUIDv7-shaped ordered ids, `order_key` from
 * `run_at`), so the claim index and the history indexes hold real entries.
 */
export async function seedWorkqJobs(
  schema: string,
  name: string,
  count: number,
  state: 'waiting' | 'completed',
  firstN: number,
): Promise<void> {
  const finished = state === 'completed';
  await pgQuery(
    `INSERT INTO "${schema}".jobs (id, name, version, payload, state, priority, job_order, order_key, run_at, created_at,
       updated_at, attempts, max_attempts, backoff, lease_ms, progress, finished_at)
     SELECT '00000000-0000-7000-8' || lpad(to_hex($4::int), 3, '0') || '-' || lpad(to_hex(g), 12, '0'),
       $1, 1, jsonb_build_object('n', g + $3::int), $2, 0, 'fifo',
       floor(extract(epoch FROM t.at) * 1000)::bigint, t.at, t.at, t.at, $5::int, 5,
       '{"type":"exponential","delayMs":1000}'::jsonb, 30000, 0, CASE WHEN $5::int = 1 THEN t.at END
     FROM generate_series(0, $6::int - 1) AS g, (SELECT now() - interval '1 hour' AS at) AS t`,
    [name, state, firstN, finished ? 2 : 1, finished ? 1 : 0, count],
  );
  // A table that grew row by row would have been vacuumed along the way; one filled in a single statement has not.
  await pgQuery(`VACUUM ANALYZE "${schema}".jobs`);
}
