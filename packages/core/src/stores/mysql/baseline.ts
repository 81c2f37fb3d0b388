/**
 * The MySQL/MariaDB store's current schema, built in one step on an empty database. Version 18 is what the
 * pre-release migration chain (steps 1 to 17) left, as `test/fixtures/mysql-schema.json` records, with the
 * group listing index and its `group_state` column (version 17), flows' columns and `children` index,
 * `idempotency_until_finished` (version 19: a key the next insert under it takes from a finished holder), and
 * the type's hold, `queue_settings.held_until` (version 20), and a job's own retention with `prune_at_ms`, which
 * leads the pruner's index `finished` (version 21), and each job's time limit, `timeout_ms`, with the
 * deadline a claim sets its attempt, `attempt_deadline` (version 22); a later schema change is a migration for
 * released databases (migrations.ts) and a change here alike.
 */
import type { Migration } from '../shared/migration.ts';
import type { Tables } from './tables.ts';

/** The current schema's version, which the baseline builds. */
export const BASELINE_VERSION = 22;

/** The oldest server that may run on the current schema (see `Migration.minServerVersion`): the first that checks. */
const BASELINE_MIN_SERVER_VERSION = 22;

/** Name of the index every claim reads; the claim query forces it. */
export const CLAIM_INDEX = 'claim_order';

/** Name of the index through which a claim finds the delayed jobs that came due. */
export const DELAYED_INDEX = 'delayed_due';

/**
 * Name of the index through which a limited claim finds a grouped type's waiting jobs, group by group: it ends
 * in the run time and version, so a claim picks each group's first ready job without reading the job's row.
 */
export const WAITING_GROUP_CLAIM_INDEX = 'waiting_group_claim';

/**
 * Name of the index through which a limited claim lists a grouped type's groups with waiting jobs: it holds
 * no descending part, which MariaDB needs to jump from group to group (a loose index scan).
 */
export const WAITING_GROUPS_INDEX = 'waiting_groups';

/** Name of the index through which a grouped claim counts one group's active jobs. */
export const ACTIVE_GROUPS_INDEX = 'active_groups';

/**
 * Name of the index through which a claim under strict group order finds the jobs that hold their groups:
 * `(name, held_group)`, where `held_group` is the group of a job back in the queue after an attempt (waiting or
 * delayed with `attempts` above 0) and NULL on every other row, so only a retry writes an entry in it.
 */
export const HELD_GROUPS_INDEX = 'held_groups';

/**
 * Name of the index through which a job list filtered by group reads the group's jobs, one run per state
 * (list-jobs.ts): `(job_group, group_state, id)`. `group_state` is the state of a job with a group and NULL
 * on every other, so a job without a group keeps one entry, `(NULL, NULL, id)`, through every state change
 * (MariaDB has no partial indexes).
 */
export const GROUP_LISTING_INDEX = 'group_listing';

/** The `group_state` column, as the jobs table ends with it. */
const GROUP_STATE_COLUMN = 'group_state VARCHAR(16) AS (IF(job_group IS NULL, NULL, state)) VIRTUAL';

/** The group listing index's columns. */
const GROUP_LISTING_COLUMNS = '(job_group, group_state, id)';

/**
 * Name of the index through which a parent's children are read, in enqueue order (their ids ascend in it):
 * listed, cancelled with their parent, revived with it. A job without a parent keeps one entry, `(NULL, id)`,
 * that no state change touches.
 */
export const CHILDREN_INDEX = 'children';

/**
 * When the pruner deletes a job that ended with a retention of its own for that end (completed:
 * `retain_completed_ms`, dead: `retain_dead_ms`), in milliseconds since 1970 (UTC, as the store writes every
 * time); NULL for every other job (not ended, cancelled, or kept for the server-wide retention). Stored, so that
 * `finished` holds it: whatever ends or revives a job sets or clears `finished_at`, and this follows without
 * any statement naming it. MariaDB takes no `INTERVAL` arithmetic in a generated column, `TIMESTAMPDIFF` it does.
 */
const PRUNE_AT_COLUMN = `prune_at_ms BIGINT AS (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', finished_at) DIV 1000
        + CASE state WHEN 'completed' THEN retain_completed_ms WHEN 'dead' THEN retain_dead_ms END) STORED`;

/**
 * Name of the index the pruner reads: `(prune_at_ms, finished_at)`. Jobs past their own retention are a range
 * of `prune_at_ms`; the others, kept for the server-wide retention, are the `prune_at_ms IS NULL` entries in
 * `finished_at` order.
 */
export const PRUNING_INDEX = 'finished';

/** Every table is InnoDB, and its text compares byte-wise. */
const TABLE_OPTIONS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin';

/**
 * The store's tables as the current schema has them. Each statement is `IF NOT EXISTS`, so a start that
 * crashed half way (MySQL commits DDL implicitly) completes on the next; the ledger row is written after them.
 */
export function baseline(t: Tables): Migration {
  return {
    version: BASELINE_VERSION,
    name: 'baseline',
    minServerVersion: BASELINE_MIN_SERVER_VERSION,
    statements: tableStatements(t),
  };
}

function tableStatements(t: Tables): string[] {
  return [
    // The columns keep the order the pre-release chain gave them, so an adopted database equals a fresh one.
    // - Text compares byte-wise. The idempotency and debounce keys are VARBINARY so that trailing spaces are
    //   significant (PAD SPACE collations would make 'a' equal 'a '); each is unique per type among the jobs
    //   holding one (NULLs do not collide). A key with a TTL holds until `idempotency_expires_at`.
    // - `claim_order` leads with state and name, so finished history is never scanned, then follows the claim
    //   order (the primary key, id, is implied last); run_at and version trail it, so scheduled or
    //   newer-version jobs are skipped within the index.
    // - A job due after its writer's clock is stored `delayed` with its run time also in `delayed_until`, null
    //   on every other row, so claims and completions, which change the state, leave `delayed_due` alone.
    // - `waiting_group` and `active_group` are the job's group while it waits, or while it is leased, and NULL
    //   otherwise, computed, not stored: a job without a group keeps NULL through every state change, so its
    //   claims and acks leave their indexes alone. `waiting_groups` has no descending part, which MariaDB
    //   needs to jump from group to group (a loose index scan).
    // - `errors` holds the latest failed attempts' errors as JSON text, oldest first; `error` is the last.
    // - Flows: a child names its `parent_id` and its `on_failure` policy; a parent counts its children
    //   (`child_count`) and those not ended (`pending_children`), and is `waiting-children` while that is above
    //   0: outside `claim_order`'s `waiting` range, so claims never read it.
    // - A job with a retention of its own keeps it (`retain_completed_ms`, `retain_dead_ms`); `prune_at_ms` is
    //   computed from it and the job's end (see `PRUNE_AT_COLUMN`), and `finished` serves both prunes.
    `CREATE TABLE IF NOT EXISTS ${t.jobs} (
      id VARCHAR(36) NOT NULL,
      name VARCHAR(100) NOT NULL,
      version INT NOT NULL,
      payload LONGTEXT NOT NULL,
      state VARCHAR(16) NOT NULL,
      priority INT NOT NULL,
      job_order VARCHAR(8) NOT NULL,
      order_key BIGINT NOT NULL,
      tie_key VARCHAR(36) NOT NULL,
      run_at DATETIME(3) NOT NULL,
      created_at DATETIME(3) NOT NULL,
      updated_at DATETIME(3) NOT NULL,
      attempts INT NOT NULL,
      max_attempts INT NOT NULL,
      backoff TEXT NOT NULL,
      lease_ms INT NOT NULL,
      lease_token VARCHAR(64) NULL,
      lease_expires_at DATETIME(3) NULL,
      worker_id VARCHAR(255) NULL,
      progress DOUBLE NOT NULL,
      result LONGTEXT NULL,
      error LONGTEXT NULL,
      idempotency_key VARBINARY(1020) NULL,
      finished_at DATETIME(3) NULL,
      moved_to VARCHAR(36) NULL,
      replay_of VARCHAR(36) NULL,
      delayed_until DATETIME(3) NULL,
      job_group VARCHAR(255) NULL,
      idempotency_expires_at DATETIME(3) NULL,
      debounce_key VARBINARY(1020) NULL,
      trace_context TEXT NULL,
      waiting_group VARCHAR(255) AS (IF(state = 'waiting', job_group, NULL)) VIRTUAL,
      moved_from VARCHAR(36) NULL,
      active_group VARCHAR(255) AS (IF(state = 'active', job_group, NULL)) VIRTUAL,
      errors LONGTEXT NULL,
      ${GROUP_STATE_COLUMN},
      parent_id VARCHAR(36) NULL,
      on_failure VARCHAR(16) NULL,
      child_count INT NOT NULL DEFAULT 0,
      pending_children INT NOT NULL DEFAULT 0,
      idempotency_until_finished BOOLEAN NOT NULL DEFAULT FALSE,
      retain_completed_ms BIGINT NULL,
      retain_dead_ms BIGINT NULL,
      ${PRUNE_AT_COLUMN},
      held_group VARCHAR(255) AS (IF(attempts > 0 AND state IN ('waiting', 'delayed'), job_group, NULL)) VIRTUAL,
      timeout_ms INT NULL,
      attempt_deadline DATETIME(3) NULL,
      PRIMARY KEY (id),
      KEY ${CLAIM_INDEX} (state, name, priority DESC, order_key, tie_key, id, run_at, version),
      KEY lease_expiry (state, lease_expires_at),
      KEY ${PRUNING_INDEX} (prune_at_ms, finished_at),
      KEY listing (name, state, id),
      UNIQUE KEY idempotency (name, idempotency_key),
      KEY ${DELAYED_INDEX} (name, delayed_until),
      UNIQUE KEY debounce (name, debounce_key),
      KEY ${WAITING_GROUPS_INDEX} (name, waiting_group),
      KEY ${WAITING_GROUP_CLAIM_INDEX} (name, waiting_group, priority DESC, order_key, tie_key, id, run_at, version),
      KEY ${ACTIVE_GROUPS_INDEX} (name, active_group),
      KEY ${HELD_GROUPS_INDEX} (name, held_group),
      KEY ${GROUP_LISTING_INDEX} ${GROUP_LISTING_COLUMNS},
      KEY ${CHILDREN_INDEX} (parent_id, id)
    ) ${TABLE_OPTIONS}`,
    `CREATE TABLE IF NOT EXISTS ${t.schemas} (
      name VARCHAR(100) NOT NULL,
      version INT NOT NULL,
      fingerprint VARCHAR(255) NOT NULL,
      json_schema LONGTEXT NOT NULL,
      registered_at DATETIME(3) NOT NULL,
      PRIMARY KEY (name, version)
    ) ${TABLE_OPTIONS}`,
    // Presence only, which live consumers write again within seconds.
    `CREATE TABLE IF NOT EXISTS ${t.workers} (
      id VARCHAR(255) NOT NULL,
      host VARCHAR(255) NOT NULL,
      name VARCHAR(100) NOT NULL,
      min_version INT NOT NULL,
      max_version INT NOT NULL,
      seen_at DATETIME(3) NOT NULL,
      pid INT NULL,
      started_at DATETIME(3) NULL,
      PRIMARY KEY (id),
      KEY seen (seen_at)
    ) ${TABLE_OPTIONS}`,
    // Subscribers read by seq; trimming deletes by created_at (the server's UTC clock). See notifier.ts.
    `CREATE TABLE IF NOT EXISTS ${t.wakeups} (
      seq BIGINT NOT NULL AUTO_INCREMENT,
      message MEDIUMTEXT NOT NULL,
      created_at DATETIME(3) NOT NULL,
      PRIMARY KEY (seq),
      KEY created (created_at)
    ) ${TABLE_OPTIONS}`,
    // One renewable lease per role (see leadership.ts).
    `CREATE TABLE IF NOT EXISTS ${t.leaders} (
      role VARCHAR(191) NOT NULL,
      holder VARCHAR(191) NOT NULL,
      expires_at DATETIME(3) NOT NULL,
      PRIMARY KEY (role)
    ) ${TABLE_OPTIONS}`,
    // A type's settings row is what its limited claims lock, one at a time; `group_cursor` is the last group
    // the type's latest grouped claim leased from (see flow-control.ts and group-claim.ts); `held_until` is
    // when the type's hold (`ctx.rateLimited`) ends; `group_order` is 'strict' when a started job holds its
    // group (sql/lock-group-holders.ts).
    `CREATE TABLE IF NOT EXISTS ${t.queueSettings} (
      name VARCHAR(100) NOT NULL,
      paused TINYINT(1) NOT NULL DEFAULT 0,
      concurrency INT NULL,
      rate_max INT NULL,
      rate_per_ms BIGINT NULL,
      group_concurrency INT NULL,
      grouped TINYINT(1) NOT NULL DEFAULT 0,
      recent_starts LONGTEXT NOT NULL,
      last_turn BIGINT NOT NULL DEFAULT 0,
      updated_at DATETIME(3) NOT NULL,
      group_cursor VARCHAR(255) NULL,
      held_until DATETIME(3) NULL,
      group_order VARCHAR(8) NULL,
      PRIMARY KEY (name)
    ) ${TABLE_OPTIONS}`,
    `CREATE TABLE IF NOT EXISTS ${t.schedules} (
      schedule_key VARCHAR(200) NOT NULL,
      cron VARCHAR(200) NOT NULL,
      timezone VARCHAR(100) NOT NULL,
      name VARCHAR(100) NOT NULL,
      version INT NULL,
      payload LONGTEXT NULL,
      options LONGTEXT NULL,
      updated_at DATETIME(3) NOT NULL,
      PRIMARY KEY (schedule_key)
    ) ${TABLE_OPTIONS}`,
    `CREATE TABLE IF NOT EXISTS ${t.scheduleRuns} (
      schedule_key VARCHAR(220) NOT NULL,
      job_id VARCHAR(36) NOT NULL,
      run_at DATETIME(3) NOT NULL,
      PRIMARY KEY (schedule_key)
    ) ${TABLE_OPTIONS}`,
  ];
}
