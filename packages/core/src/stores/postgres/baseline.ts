import type { Migration } from '../shared/migration.ts';
import { CLAIM_JOBS } from './sql/claim-jobs.ts';
import { CLAIM_JOBS_UNLESS_HELD } from './sql/claim-jobs-unless-held.ts';
import { CLAIM_UNDER_LIMITS } from './sql/claim-under-limits.ts';
import { CLAIMABLE_JOB_IDS } from './sql/claimable-job-ids.ts';
import { COMPLETE_JOBS } from './sql/complete-jobs.ts';
import { CANCEL_JOB, FAIL_JOB, REQUEUE_EXPIRED_LEASES, RETRY_DEAD_JOBS } from './sql/end-jobs.ts';
import { MS_AFTER, PRUNE_AT_SQL } from './sql/prune-at.ts';
import { CANCEL_FLOW_DESCENDANTS, COUNT_DOWN_PARENTS, REVIVE_PARENTS, SETTLE_PARENTS } from './sql/settle-parents.ts';

/**
 * The jobs table. Each row is a job, kept as history once finished. Stored states: `delayed` (due later, outside
 * the claim index), `waiting`, `active`, `completed`, `dead`, `cancelled`. `order_key` is the run time in ms,
 * negated for lifo, and `order_tie` the id (its digits inverted for lifo), so one ascending walk of
 * `jobs_claim_idx` gives priority, then fifo or lifo order. A lease expiry only on an active job, a lease token
 * only on an active or completed one (a completed job keeps the token of the lease that completed it, so a
 * repeated ack is recognised): the fencing condition (`fenced` in statements.ts) rests on that constraint.
 * The column order is the pre-release schema's, which `claim_jobs`'s `SETOF jobs` rows follow. Flows: a child
 * has a `parent_id` and an `on_failure` policy; a parent counts its children (`child_count`) and those not ended
 * (`pending_children`), above 0 exactly while it is `waiting-children`, a state outside every claim index. A job
 * with `idempotency_until_finished` lets go of its idempotency key once finished: the next insert under the key
 * clears it (`releaseExpiredKeys` in statements.ts), so no end of a job writes anything for it.
 * A job with a retention of its own keeps it (`retain_completed_ms`, `retain_dead_ms`), and `prune_at`, computed
 * from it and the job's end, is when the pruner deletes it: every statement that ends a job, or revives one,
 * keeps it right without naming it.
 * A job with a time limit (`timeout_ms`) gets its attempt's deadline (`attempt_deadline`) from each claim; no
 * lease of the attempt ends later, and the sweep records a lease that ran out there as `TIMEOUT`.
 */
const JOBS = `
CREATE TABLE jobs (
  id text COLLATE "C" PRIMARY KEY,
  name text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  payload jsonb,
  state text NOT NULL CHECK (state IN ('delayed', 'waiting', 'waiting-children', 'active', 'completed', 'dead', 'cancelled')),
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
  replay_of text,
  job_group text COLLATE "C",
  idempotency_expires_at timestamptz,
  debounce_key text COLLATE "C",
  trace_context jsonb,
  moved_from text,
  errors jsonb,
  parent_id text COLLATE "C",
  on_failure text CHECK (on_failure IN ('fail-parent', 'ignore', 'continue')),
  child_count integer NOT NULL DEFAULT 0,
  pending_children integer NOT NULL DEFAULT 0,
  idempotency_until_finished boolean NOT NULL DEFAULT false,
  retain_completed_ms bigint,
  retain_dead_ms bigint,
  prune_at timestamptz GENERATED ALWAYS AS (${PRUNE_AT_SQL}) STORED,
  timeout_ms bigint,
  attempt_deadline timestamptz,
  CONSTRAINT jobs_lease_only_when_active
    CHECK ((lease_expires_at IS NULL OR state = 'active') AND (lease_token IS NULL OR state IN ('active', 'completed')))
)`;

/**
 * The index a job list filtered by group reads, one run per state (list-jobs.ts): partial on grouped jobs,
 * so jobs without a group cost nothing more to write.
 */
const GROUP_LIST_INDEX = `CREATE INDEX IF NOT EXISTS jobs_group_list_idx ON jobs (job_group, state, id)
  WHERE job_group IS NOT NULL`;

/**
 * Each partial where it can be, so finished history stays out of the hot ones (every state change writes an
 * entry in each index whose predicate the row matches). See docs/stores/postgres.md for who reads which.
 */
const JOB_INDEXES = [
  `CREATE INDEX jobs_claim_idx ON jobs (name, priority DESC, order_key, order_tie) WHERE state = 'waiting'`,
  `CREATE INDEX jobs_delayed_idx ON jobs (name, run_at) WHERE state = 'delayed'`,
  `CREATE INDEX jobs_group_claim_idx ON jobs (name, job_group, priority DESC, order_key, order_tie)
  WHERE state = 'waiting' AND job_group IS NOT NULL`,
  `CREATE INDEX jobs_group_held_idx ON jobs (name, job_group)
  WHERE attempts > 0 AND state IN ('waiting', 'delayed') AND job_group IS NOT NULL`,
  `CREATE INDEX jobs_open_idx ON jobs (state, name, id) WHERE state <> 'completed'`,
  `CREATE INDEX jobs_finished_at_idx ON jobs (finished_at) WHERE finished_at IS NOT NULL AND prune_at IS NULL`,
  `CREATE INDEX jobs_prune_at_idx ON jobs (prune_at) WHERE prune_at IS NOT NULL`,
  `CREATE UNIQUE INDEX jobs_idempotency_idx ON jobs (name, idempotency_key) WHERE idempotency_key IS NOT NULL`,
  `CREATE UNIQUE INDEX jobs_debounce_idx ON jobs (name, debounce_key) WHERE debounce_key IS NOT NULL`,
  `CREATE INDEX jobs_children_idx ON jobs (parent_id, id) WHERE parent_id IS NOT NULL`,
  GROUP_LIST_INDEX,
];

/** Registered payload schemas, the worker registry, leaders' leases, schedules and their last runs. */
const REGISTRIES = [
  `CREATE TABLE job_schemas (
  name text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  fingerprint text NOT NULL,
  json_schema jsonb NOT NULL,
  registered_at timestamptz NOT NULL,
  PRIMARY KEY (name, version)
)`,
  `CREATE TABLE workers (
  id text COLLATE "C" PRIMARY KEY,
  host text NOT NULL,
  name text COLLATE "C" NOT NULL,
  min_version integer NOT NULL,
  max_version integer NOT NULL,
  seen_at timestamptz NOT NULL,
  pid integer,
  started_at timestamptz
)`,
  `CREATE INDEX workers_seen_at_idx ON workers (seen_at)`,
  `CREATE TABLE leaders (
  role text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
)`,
  `CREATE TABLE schedules (
  key text COLLATE "C" PRIMARY KEY,
  cron text NOT NULL,
  timezone text NOT NULL,
  name text COLLATE "C" NOT NULL,
  version integer,
  payload jsonb,
  options jsonb,
  updated_at timestamptz NOT NULL
)`,
  `CREATE TABLE schedule_runs (
  key text COLLATE "C" PRIMARY KEY,
  job_id text NOT NULL,
  run_at timestamptz NOT NULL
)`,
];

/**
 * A type's flow-control settings: the row a limited claim of the type locks, so that counting its active jobs
 * and leasing more is one atomic step among them. `recent_starts` keeps the epoch-ms start times of the type's
 * latest starts (at most `rate_max`), so a window is checked exactly; `last_turn` numbers starts;
 * `group_cursor` is the group the type's latest claim took from last, where the next one's walk starts;
 * `held_until` is when the type's hold (`ctx.rateLimited`) ends: no claim leases a job of the type before it.
 * `group_order` is `'strict'` when a started job holds its group (`jobs_group_held_idx` finds those jobs).
 */
const QUEUE_SETTINGS = `
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
  updated_at timestamptz NOT NULL,
  group_cursor text COLLATE "C",
  held_until timestamptz,
  group_order text CHECK (group_order = 'strict')
)`;

/**
 * The schema a fresh store creates: tables, indexes, then each live function from its file under sql/, in the
 * order they call each other. Its version follows the pre-release chain it replaced (1 to 24, whose end state
 * it equals but for `jobs_group_list_idx` and flows: test/fixtures/postgres-schema.json holds that state, the
 * drift test compares the two); version 25 added flows in place, version 26 `idempotency_until_finished`,
 * version 27 the type's hold (`queue_settings.held_until`, honoured by the claims), version 29 a job's own
 * retention (`retain_completed_ms`, `retain_dead_ms`, `prune_at` and its index), version 29 time limits
 * (`timeout_ms`, `attempt_deadline`, and the claims and sweep that read them), and a schema of an earlier one
 * is refused (pre-release-schema.ts).
 */
export const BASELINE: Migration = {
  version: 29,
  name: 'baseline: jobs and flows, registries, flow control and the claim functions',
  minServerVersion: 29,
  statements: [
    MS_AFTER,
    JOBS,
    ...JOB_INDEXES,
    ...REGISTRIES,
    QUEUE_SETTINGS,
    CLAIMABLE_JOB_IDS,
    CLAIM_JOBS,
    CLAIM_JOBS_UNLESS_HELD,
    CANCEL_FLOW_DESCENDANTS,
    COUNT_DOWN_PARENTS,
    SETTLE_PARENTS,
    REVIVE_PARENTS,
    COMPLETE_JOBS,
    FAIL_JOB,
    CANCEL_JOB,
    REQUEUE_EXPIRED_LEASES,
    RETRY_DEAD_JOBS,
    CLAIM_UNDER_LIMITS,
  ],
};
