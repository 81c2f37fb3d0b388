/**
 * `ms_after(at, ms)`: `at` plus `ms` milliseconds; `NULL` when either is. Declared immutable, as it is (a span
 * of milliseconds has no days or months, so the time zone plays no part), so that the jobs table can compute
 * `prune_at` from it: PostgreSQL marks `timestamptz + interval` only stable. That mark also keeps PostgreSQL
 * from inlining it, so each call runs as a function of its own; declared strict, it is not called at all
 * when either argument is `NULL`, as it is whenever a job without a retention of its own completes.
 */
export const MS_AFTER = `
CREATE FUNCTION ms_after(at timestamptz, ms bigint) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN at + ms * interval '1 millisecond'`;

/**
 * The jobs table's `prune_at`: when the pruner deletes a job that ended with a retention of its own for that
 * end (completed: `retain_completed_ms`, dead: `retain_dead_ms`), `NULL` for every other job (not ended,
 * cancelled, or kept for the server-wide retention). `finished_at` is set by whatever ends a job and cleared
 * by whatever revives it, so `prune_at` follows without any statement naming it.
 */
export const PRUNE_AT_SQL = `CASE state WHEN 'completed' THEN ms_after(finished_at, retain_completed_ms)
    WHEN 'dead' THEN ms_after(finished_at, retain_dead_ms) END`;
