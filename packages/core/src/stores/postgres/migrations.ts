import { WorkqError } from '../../errors.ts';
import { CLAIM_UNDER_LIMITS_MIGRATION } from './claim-under-limits-migration.ts';
import { GROUP_CLAIM_MIGRATION } from './group-claim-migration.ts';
import { GROUP_CURSOR_MIGRATION } from './group-cursor-migration.ts';
import { GROUPED_LEASE_MIGRATION } from './grouped-lease-migration.ts';
import { LEAN_LIMITED_CLAIM_MIGRATION } from './lean-limited-claim-migration.ts';
import { LIMITED_CLAIM_MIGRATION } from './limited-claim-migration.ts';
import type { Migration } from './migration.ts';
import type { SqlClient } from './sql-client.ts';

export type { Migration } from './migration.ts';

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'jobs, schema and worker registries',
    sql: `
CREATE TABLE jobs (
  id text COLLATE "C" PRIMARY KEY,
  name text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  payload jsonb,
  state text NOT NULL CHECK (state IN ('waiting', 'active', 'completed', 'dead', 'cancelled')),
  priority integer NOT NULL,
  job_order text NOT NULL CHECK (job_order IN ('fifo', 'lifo')),
  order_key bigint NOT NULL,
  order_tie text COLLATE "C" NOT NULL
    GENERATED ALWAYS AS (CASE WHEN job_order = 'lifo' THEN translate(id, '0123456789abcdef', 'fedcba9876543210') ELSE id END) STORED,
  run_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  backoff jsonb NOT NULL,
  lease_ms bigint NOT NULL,
  lease_token text,
  lease_expires_at timestamptz,
  worker_id text,
  progress double precision NOT NULL DEFAULT 0,
  result jsonb,
  error jsonb,
  idempotency_key text,
  finished_at timestamptz,
  moved_to text,
  replay_of text
);
CREATE INDEX jobs_claim_idx ON jobs (name, priority DESC, order_key, order_tie) WHERE state = 'waiting';
CREATE INDEX jobs_lease_expiry_idx ON jobs (lease_expires_at) WHERE state = 'active';
CREATE INDEX jobs_finished_at_idx ON jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE UNIQUE INDEX jobs_idempotency_idx ON jobs (name, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_list_by_name_idx ON jobs (name, state, id);
CREATE INDEX jobs_list_by_state_idx ON jobs (state, id);
CREATE TABLE job_schemas (
  name text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  fingerprint text NOT NULL,
  json_schema jsonb NOT NULL,
  registered_at timestamptz NOT NULL,
  PRIMARY KEY (name, version)
);
CREATE TABLE workers (
  id text COLLATE "C" PRIMARY KEY,
  host text NOT NULL,
  name text COLLATE "C" NOT NULL,
  min_version integer NOT NULL,
  max_version integer NOT NULL,
  seen_at timestamptz NOT NULL
);
CREATE INDEX workers_seen_at_idx ON workers (seen_at);
`,
  },
  {
    version: 2,
    name: 'one listing index over unfinished and failed jobs',
    // Every state change writes a new row version and so an entry in each index whose predicate the row
    // matches. Completed jobs are the bulk of a kept history and are listed in id order straight from the
    // primary key, so the listing index leaves them out; the lease sweep finds active jobs through it too.
    sql: `
DROP INDEX jobs_list_by_name_idx;
DROP INDEX jobs_list_by_state_idx;
DROP INDEX jobs_lease_expiry_idx;
CREATE INDEX jobs_open_idx ON jobs (state, name, id) WHERE state <> 'completed';
`,
  },
  {
    version: 3,
    name: 'a lease token only on an active job',
    // Every statement that moves a job out of `active` clears its token; the constraint makes that a rule
    // the fencing condition can rest on (see `fenced` in statements.ts).
    sql: `
ALTER TABLE jobs ADD CONSTRAINT jobs_lease_token_only_when_active CHECK (lease_token IS NULL OR state = 'active');
`,
  },
  {
    version: 4,
    name: 'claims walk the claim index in order',
    // The planner's estimate of ready rows is stale between analyses (a queue drains and fills faster than
    // statistics follow). Estimating a handful, it would read every ready job through a bitmap and sort them,
    // which costs as much as the queue is long. Planned with sorts and bitmaps off, the claim's only plan
    // left is the ordered walk of the claim index, stopping after \`max_jobs\` rows. Declared to return one
    // row, so the claim that calls it looks its jobs up by primary key rather than scanning a small table.
    // (The body keeps its semicolons off line ends: migrations split statements there.)
    sql: `
CREATE FUNCTION claimable_job_ids(job_name text, due_by timestamptz, min_version integer, max_version integer, max_jobs integer)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_sort = off SET enable_bitmapscan = off SET search_path FROM CURRENT
AS $body$ BEGIN
  RETURN QUERY SELECT c.id FROM jobs AS c
  WHERE c.state = 'waiting' AND c.name = job_name AND c.run_at <= due_by AND c.version BETWEEN min_version AND max_version
  ORDER BY c.priority DESC, c.order_key, c.order_tie
  LIMIT max_jobs
  FOR UPDATE SKIP LOCKED; END $body$;
`,
  },
  {
    version: 5,
    name: 'acks look each job up by primary key',
    // A batch of acks pairs each id with its lease token and result, so it joins the batch (unnest) with the
    // jobs it names. Left to the planner, that join followed whichever statistic was stale: jobs by primary
    // key with the whole batch rescanned for each (n x n acks and jobs compared), or every row of a table
    // the statistics thought small. Planned with scans, bitmaps, hash and merge joins off, the only plan left
    // is the batch's rows in turn, each looking up its job through the primary key. The fencing condition is
    // `fenced` in statements.ts, written out.
    sql: `
CREATE FUNCTION complete_jobs(job_ids text[], lease_tokens text[], results text[], done_at timestamptz)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE ROWS 100
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET search_path FROM CURRENT
AS $body$ BEGIN
  RETURN QUERY UPDATE jobs AS j
  SET state = 'completed', result = u.result::jsonb, lease_token = NULL, lease_expires_at = NULL,
    finished_at = done_at, updated_at = done_at
  FROM unnest(job_ids, lease_tokens, results) AS u(id, lease_token, result)
  WHERE j.id = u.id AND j.lease_token = u.lease_token AND j.lease_expires_at > done_at
  RETURNING j.id; END $body$;
`,
  },
  {
    version: 6,
    name: 'jobs due later wait outside the claim index',
    // A claim walks the claim index in order and stepped over every job there that was not yet due, reading
    // its row for the run time, so claims slowed down with every job scheduled for later. A job written
    // with a run time after its writer's clock is now stored `delayed`, indexed by name
    // and run time alone. Each claim first moves its name's due delayed jobs into `waiting` (up to 1,000 at a
    // time, earliest first), in a statement of its own so that the claim, the next statement, sees them;
    // hence one function for both. Jobs already waiting for later move to `delayed` here, by the database's
    // clock; any left `waiting` with a later run time (a writer whose clock ran ahead) are claimed only when
    // due, as before. (The body keeps its semicolons off line ends, as in migration 4.)
    sql: `
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
  CHECK (state IN ('delayed', 'waiting', 'active', 'completed', 'dead', 'cancelled'));
UPDATE jobs SET state = 'delayed' WHERE state = 'waiting' AND run_at > now();
CREATE INDEX jobs_delayed_idx ON jobs (name, run_at) WHERE state = 'delayed';
CREATE FUNCTION claim_jobs(job_name text, due_by timestamptz, min_version integer, max_version integer, max_jobs integer,
  new_lease_token text, new_worker_id text, lease_ms_override bigint)
RETURNS SETOF jobs LANGUAGE plpgsql VOLATILE ROWS 100
SET search_path FROM CURRENT
AS $body$ BEGIN
  PERFORM set_config('synchronous_commit', 'off', true); UPDATE jobs AS d SET state = 'waiting'
  WHERE d.id IN (SELECT s.id FROM jobs AS s WHERE s.state = 'delayed' AND s.name = job_name AND s.run_at <= due_by
    ORDER BY s.run_at LIMIT 1000 FOR UPDATE SKIP LOCKED); RETURN QUERY UPDATE jobs AS j
  SET state = 'active', attempts = j.attempts + 1, lease_token = new_lease_token, worker_id = new_worker_id,
    lease_expires_at = due_by + coalesce(lease_ms_override, j.lease_ms) * interval '1 millisecond', updated_at = due_by
  WHERE j.id IN (SELECT claimable_job_ids(job_name, due_by, min_version, max_version, max_jobs))
  RETURNING j.*; END $body$;
`,
  },
  {
    version: 7,
    name: 'a claim moves every due delayed job before it claims',
    // Migration 6 moved at most 1,000 due delayed jobs per claim, earliest first. With more than that coming due
    // at once, a job of higher priority due after the first 1,000 stayed delayed while lower ones were claimed.
    // The move now repeats, 1,000 at a time, until none of the name's due delayed jobs is left that no other
    // claim holds; usually it runs once and moves nothing. (Semicolons stay off line ends, as in migration 4.)
    sql: `
CREATE OR REPLACE FUNCTION claim_jobs(job_name text, due_by timestamptz, min_version integer, max_version integer, max_jobs integer,
  new_lease_token text, new_worker_id text, lease_ms_override bigint)
RETURNS SETOF jobs LANGUAGE plpgsql VOLATILE ROWS 100
SET search_path FROM CURRENT
AS $body$ DECLARE moved integer; BEGIN
  PERFORM set_config('synchronous_commit', 'off', true); LOOP UPDATE jobs AS d SET state = 'waiting'
  WHERE d.id IN (SELECT s.id FROM jobs AS s WHERE s.state = 'delayed' AND s.name = job_name AND s.run_at <= due_by
    ORDER BY s.run_at LIMIT 1000 FOR UPDATE SKIP LOCKED); GET DIAGNOSTICS moved = ROW_COUNT; EXIT WHEN moved < 1000; END LOOP; RETURN QUERY UPDATE jobs AS j
  SET state = 'active', attempts = j.attempts + 1, lease_token = new_lease_token, worker_id = new_worker_id,
    lease_expires_at = due_by + coalesce(lease_ms_override, j.lease_ms) * interval '1 millisecond', updated_at = due_by
  WHERE j.id IN (SELECT claimable_job_ids(job_name, due_by, min_version, max_version, max_jobs))
  RETURNING j.*; END $body$;
`,
  },
  {
    version: 8,
    name: 'a completed job keeps the token of the lease that completed it',
    // So that an ack sent again (its sender never read the answer) is recognised as applied, by any server.
    // The fencing condition now rests on the lease's expiry, which only an active job has; the token stays
    // only on completion. The acks' function is migration 5's, with the token kept.
    sql: `
ALTER TABLE jobs DROP CONSTRAINT jobs_lease_token_only_when_active;
ALTER TABLE jobs ADD CONSTRAINT jobs_lease_only_when_active
  CHECK ((lease_expires_at IS NULL OR state = 'active') AND (lease_token IS NULL OR state IN ('active', 'completed')));
CREATE OR REPLACE FUNCTION complete_jobs(job_ids text[], lease_tokens text[], results text[], done_at timestamptz)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE ROWS 100
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET search_path FROM CURRENT
AS $body$ BEGIN
  RETURN QUERY UPDATE jobs AS j
  SET state = 'completed', result = u.result::jsonb, lease_expires_at = NULL, finished_at = done_at, updated_at = done_at
  FROM unnest(job_ids, lease_tokens, results) AS u(id, lease_token, result)
  WHERE j.id = u.id AND j.lease_token = u.lease_token AND j.lease_expires_at > done_at
  RETURNING j.id; END $body$;
`,
  },
  {
    version: 9,
    name: 'leaders: one holder per role at a time, by renewable leases',
    sql: `
CREATE TABLE leaders (
  role text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);
`,
  },
  {
    version: 10,
    name: 'flow control: per-type settings, job groups and their turns',
    // A type's settings row is what limited claims of the type lock, one at a time, so that counting its active
    // jobs and leasing more is one atomic step among them. `recent_starts` keeps the start times (epoch ms) of
    // the type's latest starts, at most the rate limit's `max`, so a window is checked exactly; `last_turn`
    // numbers starts, and `queue_groups` keeps the number of each group's last start, so groups take turns.
    // The group claim index holds only jobs with a group: jobs without one cost no more to insert.
    sql: `
CREATE TABLE queue_settings (
  name text COLLATE "C" PRIMARY KEY,
  paused boolean NOT NULL DEFAULT false,
  concurrency integer,
  rate_max integer,
  rate_per_ms bigint,
  group_concurrency integer,
  grouped boolean NOT NULL DEFAULT false,
  recent_starts bigint[] NOT NULL DEFAULT '{}',
  last_turn bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL
);
CREATE TABLE queue_groups (
  name text COLLATE "C" NOT NULL,
  job_group text COLLATE "C" NOT NULL,
  last_turn bigint NOT NULL,
  PRIMARY KEY (name, job_group)
);
ALTER TABLE jobs ADD COLUMN job_group text COLLATE "C";
CREATE INDEX jobs_group_claim_idx ON jobs (name, job_group, priority DESC, order_key, order_tie)
  WHERE state = 'waiting' AND job_group IS NOT NULL;
`,
  },
  {
    version: 12,
    name: 'idempotency keys that expire, and debounce keys',
    // A key with a TTL holds until `idempotency_expires_at`; after it, the next insert with the key clears it on
    // the old job (still under the unique index, so concurrent inserts settle on one new holder) and inserts.
    // A debounce key is unique per type too, among the jobs that hold one; an insert with it updates the
    // holder while it waits, and clears it on a holder that started or finished. Both columns are nullable with
    // no default, so adding them rewrites no rows, and the index holds only debounced jobs.
    sql: `
ALTER TABLE jobs ADD COLUMN idempotency_expires_at timestamptz, ADD COLUMN debounce_key text COLLATE "C";
CREATE UNIQUE INDEX jobs_debounce_idx ON jobs (name, debounce_key) WHERE debounce_key IS NOT NULL;
`,
  },
  {
    version: 13,
    name: 'schedules kept in the store, their last runs, and the worker registry’s process id and start time',
    sql: `
CREATE TABLE schedules (
  key text COLLATE "C" PRIMARY KEY,
  cron text NOT NULL,
  timezone text NOT NULL,
  name text COLLATE "C" NOT NULL,
  version integer,
  payload jsonb,
  options jsonb,
  updated_at timestamptz NOT NULL
);
CREATE TABLE schedule_runs (
  key text COLLATE "C" PRIMARY KEY,
  job_id text NOT NULL,
  run_at timestamptz NOT NULL
);
ALTER TABLE workers ADD COLUMN pid integer, ADD COLUMN started_at timestamptz;
`,
  },
  {
    version: 14,
    name: 'the trace context a job was created in',
    // Kept as given (a propagation carrier such as { traceparent, tracestate }) and returned by claims, so the
    // worker's span links to the producer's. Nullable with no default: adding it rewrites no rows.
    sql: `
ALTER TABLE jobs ADD COLUMN trace_context jsonb;
`,
  },
  LIMITED_CLAIM_MIGRATION,
  {
    version: 18,
    name: 'the job a moved job came from',
    // Set by moveJob on the job it inserts, so a job's page can link back to the job whose moveTo made it.
    sql: `
ALTER TABLE jobs ADD COLUMN moved_from text;
`,
  },
  GROUP_CLAIM_MIGRATION,
  GROUP_CURSOR_MIGRATION,
  GROUPED_LEASE_MIGRATION,
  LEAN_LIMITED_CLAIM_MIGRATION,
  CLAIM_UNDER_LIMITS_MIGRATION,
  {
    version: 24,
    name: 'every failed attempt’s error',
    // The errors of a job's latest failed attempts (see ERROR_HISTORY_LIMITS), oldest first; `error` stays the
    // last. Nullable with no default: adding it rewrites no rows, and a job failing again starts it from `error`.
    sql: `
ALTER TABLE jobs ADD COLUMN errors jsonb;
`,
  },
];

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Validates a schema name and returns it quoted, ready to splice into SQL. */
export function quoteSchema(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new WorkqError(
      'VALIDATION',
      `Invalid PostgreSQL schema name "${schema}": use lowercase letters, digits and _, starting with a letter or _, at most 63 characters.`,
    );
  }
  return `"${schema}"`;
}

/** A migration's statements: split where a line ends with `;`, except inside a function body (`$body$ … $body$`). */
function statements(sql: string): string[] {
  const bodies: string[] = [];
  const masked = sql.replace(/\$body\$[\s\S]*?\$body\$/g, (body) => `$body${bodies.push(body) - 1}$`);
  return masked
    .split(/;\s*$/m)
    .map((statement) => statement.replace(/\$body(\d+)\$/g, (_, i: string) => bodies[Number(i)] as string).trim())
    .filter((statement) => statement !== '');
}

/**
 * Brings `schema` up to the latest migration. Runs in one transaction under
 * an advisory lock keyed by the schema, so concurrent starts apply each
 * migration once; when everything is applied it changes nothing.
 */
export async function migrate(client: SqlClient, schema: string): Promise<void> {
  const quoted = quoteSchema(schema);
  await client.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`workq.migrate:${schema}`]);
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
    // applied_at is bookkeeping for operators; job times never come from the database clock.
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${quoted}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const applied = await tx.query<{ version: number }>(`SELECT version FROM ${quoted}.migrations`);
    const done = new Set(applied.map((row) => row.version));
    const pending = MIGRATIONS.filter((migration) => !done.has(migration.version));
    if (pending.length === 0) return;
    await tx.query(`SET LOCAL search_path TO ${quoted}`);
    for (const migration of pending) {
      for (const statement of statements(migration.sql)) await tx.query(statement);
      await tx.query(`INSERT INTO ${quoted}.migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
  });
}
