import { perRead } from '../shared/unread-columns.ts';
import { buildAdminStatements } from './admin-statements.ts';
import { debounceJobSql, insertAndClaimJobSql, insertJobsSql } from './insert-statements.ts';
import { JOB_COLUMNS, jobColumnsFor } from './records.ts';
import { readiedSql } from './sql/settle-parents.ts';
import { NOT_STARTED_SQL, notStartedSql, orderKeySql } from './sql-fragments.ts';

/**
 * The fencing condition: `$id` is held by the unexpired lease `$token` at `$now`. A job has a lease expiry
 * only while it is active (a table constraint, baseline.ts), so the condition names no state: that keeps the
 * open-jobs index, whose estimate of active rows is stale between analyses, out of the planner's choice.
 * `complete_jobs` (sql/complete-jobs.ts) writes the same condition out for a batch of acks.
 */
function fenced(id: string, token: string, now: string): string {
  return `j.id = ${id} AND j.lease_token = ${token} AND j.lease_expires_at > ${now}::timestamptz`;
}

/**
 * The store's other runtime statements, built once per schema (the plain claim's is in sql/claim-jobs.ts).
 * Values are always parameters; the only spliced identifier is the schema, validated and quoted by
 * `quoteSchema`.
 */
export function buildStatements(quotedSchema: string) {
  const jobs = `${quotedSchema}.jobs`;
  return {
    /**
     * The parameters of `newJobParams(jobs, false)`, inserted in array order. Keys already taken are skipped.
     * Returns only the ids it created: their rows are what was sent (see `insertedRecord`).
     */
    insertJobs: insertJobsSql(jobs, { skipTakenKeys: true, alike: false }),

    /**
     * `insertJobs` for a batch without idempotency keys: a plain insert, with no conflict arbiter to check per
     * row. It returns nothing: every job is inserted, or the statement fails.
     */
    insertJobsWithoutKeys: insertJobsSql(jobs, { skipTakenKeys: false, alike: false }),

    /** `insertJobs` for jobs that share their settings: the parameters of `newJobParams(jobs, true)`. */
    insertAlikeJobs: insertJobsSql(jobs, { skipTakenKeys: true, alike: true }),

    /** `insertJobsWithoutKeys` for jobs that share their settings. */
    insertAlikeJobsWithoutKeys: insertJobsSql(jobs, { skipTakenKeys: false, alike: true }),

    /** See `insertAndClaimJobSql`. Returns the new job's state: `active` when it was leased. */
    insertAndClaimJob: insertAndClaimJobSql(quotedSchema, { skipTakenKey: false }),
    /** `insertAndClaimJob` for a job with an idempotency key: no row when the key is taken (nothing inserted). */
    insertAndClaimKeyedJob: insertAndClaimJobSql(quotedSchema, { skipTakenKey: true }),

    /** See `debounceJobSql`, one per `DebounceMode`. */
    debounceJob: {
      replace: debounceJobSql(jobs, 'replace'),
      preserveRunAt: debounceJobSql(jobs, 'preserveRunAt'),
      keepFirst: debounceJobSql(jobs, 'keepFirst'),
    },

    /** $1 name, $2 debounce key: clears the key on a holder that has started (once, at least) or finished. */
    releaseDebounceKey: `UPDATE ${jobs} AS j SET debounce_key = NULL
WHERE j.name = $1 AND j.debounce_key = $2 AND (j.state NOT IN ${NOT_STARTED_SQL} OR j.attempts > 0)`,

    /**
     * $1 names, $2 idempotency keys, $3 the times of the inserts that found them taken (parallel arrays): clears
     * each key on its holder when the key expired by then, or was held until the holder finished, which it has.
     */
    releaseExpiredKeys: `UPDATE ${jobs} AS j SET idempotency_key = NULL
FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS k(name, idempotency_key, now)
WHERE j.name = k.name AND j.idempotency_key = k.idempotency_key
  AND (j.idempotency_expires_at <= k.now
    OR (j.idempotency_until_finished AND j.state IN ('completed', 'dead', 'cancelled')))`,

    /** $1 names, $2 idempotency keys (parallel text[]). */
    selectByIdempotencyKeys: `SELECT ${JOB_COLUMNS} FROM ${jobs} AS j
JOIN unnest($1::text[], $2::text[]) AS k(name, idempotency_key)
  ON j.name = k.name AND j.idempotency_key = k.idempotency_key`,

    /**
     * $1 ids, $2 lease tokens, $3 results as JSON text (parallel text[]), $4 now. Returns the ids it completed:
     * those still held by their token (`complete_jobs`, sql/complete-jobs.ts, looks each up by primary key).
     */
    completeJobs: `SELECT id, ${readiedSql} AS readied
FROM ${quotedSchema}.complete_jobs($1::text[], $2::text[], $3::text[], $4::timestamptz) AS id`,

    /** $1 ids, $2 their lease tokens (parallel text[]), $3 now. */
    releaseJobs: `UPDATE ${jobs} AS j
SET state = 'waiting', attempts = j.attempts - 1, lease_token = NULL, lease_expires_at = NULL, worker_id = NULL,
  updated_at = $3::timestamptz
FROM unnest($1::text[], $2::text[]) AS u(id, lease_token)
WHERE ${fenced('u.id', 'u.lease_token', '$3')}
RETURNING j.id`,

    /**
     * $1 id, $2 token, $3 retry at or null (dead), $4 error JSON, $5 now (`fail_job`, sql/end-jobs.ts). Fenced: returns
     * the id when the lease held, and the parents a dead child made ready.
     */
    failJob: `SELECT id, ${readiedSql} AS readied
FROM ${quotedSchema}.fail_job($1, $2, $3::timestamptz, $4, $5::timestamptz) AS id`,

    /**
     * $1 id, $2 token, $3 run at, $4 now (`Store.snoozeJob`). Fenced: the held job waits again for $3 (`delayed`
     * when that is after $4), its attempt uncounted, its lease ended and its debounce key given up (it has
     * started); returns the id when the lease held.
     */
    snoozeJob: `UPDATE ${jobs} AS j
SET state = ${notStartedSql('$3::timestamptz', '$4::timestamptz')}, run_at = $3::timestamptz,
  order_key = ${orderKeySql('j.job_order', '$3::timestamptz')}, attempts = j.attempts - 1,
  lease_token = NULL, lease_expires_at = NULL, worker_id = NULL, debounce_key = NULL, updated_at = $4::timestamptz
WHERE ${fenced('$1', '$2', '$4')}
RETURNING j.id`,

    /**
     * $1 id, $2 token, $3 new expiry, $4 now. The expiry stops at the attempt's deadline (`least` skips a `NULL`);
     * returns it as stored.
     */
    extendLease: `UPDATE ${jobs} AS j SET lease_expires_at = least($3::timestamptz, j.attempt_deadline), updated_at = $4::timestamptz
WHERE ${fenced('$1', '$2', '$4')}
RETURNING j.lease_expires_at`,

    /** $1 id, $2 token, $3 progress, $4 now. */
    recordProgress: `UPDATE ${jobs} AS j SET progress = $3::double precision, updated_at = $4::timestamptz
WHERE ${fenced('$1', '$2', '$4')}
RETURNING j.id`,

    /** $1 id, $2 token, $3 payload JSON, $4 its version, $5 now. */
    updatePayload: `UPDATE ${jobs} AS j SET payload = $3::text::jsonb, version = $4::int, updated_at = $5::timestamptz
WHERE ${fenced('$1', '$2', '$5')}
RETURNING j.id`,

    /** $1 id, $2 token, $3 next job's id, $4 now. Completes the held job, recording where it moved. */
    completeMovedJob: `UPDATE ${jobs} AS j
SET state = 'completed', moved_to = $3, lease_token = NULL, lease_expires_at = NULL,
  finished_at = $4::timestamptz, updated_at = $4::timestamptz
WHERE ${fenced('$1', '$2', '$4')}
RETURNING j.id, j.parent_id`,

    /** $1 ids of children that ended in this transaction, $2 now: settles their parents (`settle_parents`). */
    settleParents: `SELECT ${quotedSchema}.settle_parents($1::text[], $2::timestamptz)`,

    /** The names of the parents made ready in this transaction so far (JSON text; empty or null: none). */
    readiedParents: `SELECT ${readiedSql} AS readied`,

    /** $1 id, $2 the job it moved into. Within `moveJob`'s transaction, after `completeMovedJob`. */
    setMovedTo: `UPDATE ${jobs} AS j SET moved_to = $2 WHERE j.id = $1`,

    /** $1 id of the job a move inserted, $2 the job it was moved from. Within `moveJob`'s transaction. */
    setMovedFrom: `UPDATE ${jobs} AS j SET moved_from = $2 WHERE j.id = $1`,

    /** $1 id, $2 now (`cancel_job`, sql/end-jobs.ts): the cancelled job, and the parents it made ready. */
    cancelJob: `SELECT ${JOB_COLUMNS}, ${readiedSql} AS readied FROM ${quotedSchema}.cancel_job($1, $2::timestamptz) AS j`,

    /** $1 id, $2 now. A scheduled job (not started, due after now) becomes due now, in the claim index. */
    promoteJob: `UPDATE ${jobs} AS j
SET state = 'waiting', run_at = $2::timestamptz, order_key = ${orderKeySql('j.job_order', '$2::timestamptz')},
  updated_at = $2::timestamptz
WHERE j.id = $1 AND j.state IN ${NOT_STARTED_SQL} AND j.run_at > $2::timestamptz
RETURNING ${JOB_COLUMNS}`,

    ...buildAdminStatements(quotedSchema),

    /** $1 id: the job, read as `read` says. */
    getJob: perRead((read) => `SELECT ${jobColumnsFor(read)} FROM ${jobs} AS j WHERE j.id = $1`),

    /** $1 ids (text[]): the jobs holding them, for inserts that found ids taken. */
    selectByIds: `SELECT ${JOB_COLUMNS} FROM ${jobs} AS j WHERE j.id = ANY($1::text[])`,

    /** $1 now. Visible state: a job not started is `ready` or `scheduled` at `now`, whatever it is stored as. */
    countJobs: `SELECT j.name, j.version,
  CASE WHEN j.state NOT IN ${NOT_STARTED_SQL} THEN j.state WHEN j.run_at <= $1::timestamptz THEN 'ready' ELSE 'scheduled' END AS state,
  count(*)::int AS count
FROM ${jobs} AS j
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3`,

    /** $1 name or null, $2 ids or null, $3 now (`retry_dead_jobs`, sql/end-jobs.ts). */
    retryDeadJobs: `SELECT ${quotedSchema}.retry_dead_jobs($1, $2::text[], $3::timestamptz) AS count`,

    /** $1 now, $2 error JSON, its `attempt` set per job (`requeue_expired_leases`, sql/end-jobs.ts). */
    requeueExpiredLeases: `SELECT r.*, ${readiedSql} AS readied FROM ${quotedSchema}.requeue_expired_leases($1::timestamptz, $2, $3) AS r`,

    /**
     * $1 finished before, $2 limit, $3 now: jobs past their own retention (`prune_at`), oldest first, then, up
     * to the limit, the other finished jobs that finished before $1, each through its partial index.
     */
    pruneJobs: `WITH own AS (
  SELECT p.id FROM ${jobs} AS p
  WHERE p.prune_at <= $3::timestamptz
  ORDER BY p.prune_at
  LIMIT $2::int
  FOR UPDATE SKIP LOCKED
), shared AS (
  SELECT p.id FROM ${jobs} AS p
  WHERE p.finished_at IS NOT NULL AND p.prune_at IS NULL AND p.finished_at < $1::timestamptz
  ORDER BY p.finished_at
  LIMIT greatest($2::int - (SELECT count(*) FROM own), 0)
  FOR UPDATE SKIP LOCKED
), pruned AS (
  DELETE FROM ${jobs} AS j WHERE j.id IN (SELECT id FROM own UNION ALL SELECT id FROM shared)
  RETURNING 1)
SELECT count(*)::int AS count FROM pruned`,

    /** $1 name, $2 version, $3 fingerprint, $4 JSON Schema as JSON text, $5 registered at. */
    insertSchema: `INSERT INTO ${quotedSchema}.job_schemas (name, version, fingerprint, json_schema, registered_at)
VALUES ($1, $2::int, $3, $4::text::jsonb, $5::timestamptz)
ON CONFLICT (name, version) DO NOTHING`,

    /** $1 name, $2 version. */
    getSchema: `SELECT name, version, fingerprint, json_schema, registered_at FROM ${quotedSchema}.job_schemas
WHERE name = $1 AND version = $2::int`,

    /** $1 name, $2 version: one row back when a schema was deleted. */
    deleteSchema: `DELETE FROM ${quotedSchema}.job_schemas WHERE name = $1 AND version = $2::int RETURNING 1 AS deleted`,

    /** $1 name or null. */
    listSchemas: `SELECT name, version, fingerprint, json_schema, registered_at FROM ${quotedSchema}.job_schemas
WHERE $1::text IS NULL OR name = $1
ORDER BY name, version`,

    /**
     * $1 id, $2 host, $3 name, $4 min version, $5 max version, $6 seen at, $7 pid, $8 started at, $9 max
     * workers, $10 idle before: a row back when recorded. A known id is updated; a new one is inserted while
     * the table holds fewer than $9 rows, or in the place of the row seen longest ago before $10, which
     * `evicted` deletes (see `Store.recordWorker`).
     */
    recordWorker: `WITH known AS (SELECT 1 FROM ${quotedSchema}.workers WHERE id = $1),
held AS (SELECT count(*) AS n FROM (SELECT 1 FROM ${quotedSchema}.workers LIMIT $9::int) AS rows),
evicted AS (
  DELETE FROM ${quotedSchema}.workers
  WHERE id = (SELECT id FROM ${quotedSchema}.workers WHERE seen_at < $10::timestamptz
              ORDER BY seen_at LIMIT 1 FOR UPDATE SKIP LOCKED)
    AND NOT EXISTS (SELECT 1 FROM known) AND (SELECT n FROM held) >= $9::int
  RETURNING 1
)
INSERT INTO ${quotedSchema}.workers (id, host, name, min_version, max_version, seen_at, pid, started_at)
SELECT $1, $2, $3, $4::int, $5::int, $6::timestamptz, $7::int, $8::timestamptz
WHERE EXISTS (SELECT 1 FROM known) OR (SELECT n FROM held) < $9::int OR EXISTS (SELECT 1 FROM evicted)
ON CONFLICT (id) DO UPDATE SET host = excluded.host, name = excluded.name, min_version = excluded.min_version,
  max_version = excluded.max_version, seen_at = excluded.seen_at, pid = excluded.pid, started_at = excluded.started_at
RETURNING 1 AS recorded`,

    /** $1 seen before: how many workers were deleted. */
    pruneWorkers: `WITH pruned AS (DELETE FROM ${quotedSchema}.workers WHERE seen_at < $1::timestamptz RETURNING 1)
SELECT count(*)::int AS n FROM pruned`,

    /** $1 worker ids, $2 seen at. */
    touchWorkers: `UPDATE ${quotedSchema}.workers SET seen_at = $2::timestamptz
WHERE id = ANY($1::text[]) AND seen_at < $2::timestamptz`,

    /**
     * Housekeeping, not a guarantee (see `vacuumEveryRows`). `PARALLEL 0`: otherwise each run starts and ends
     * worker processes to vacuum the indexes side by side, which cost the database more CPU than the vacuum
     * itself while the queue is busy.
     */
    vacuumJobs: `VACUUM (SKIP_LOCKED, PARALLEL 0) ${jobs}`,

    /** The jobs table's row count as the last vacuum or analyze estimated it (-1 before either ran). */
    estimateJobRows: `SELECT reltuples::float8 AS rows FROM pg_class WHERE oid = '${jobs}'::regclass`,

    /** $1 seen since. */
    listWorkers: `SELECT id, host, name, min_version, max_version, seen_at, pid, started_at FROM ${quotedSchema}.workers
WHERE seen_at >= $1::timestamptz
ORDER BY id`,
  };
}

export type Statements = ReturnType<typeof buildStatements>;
