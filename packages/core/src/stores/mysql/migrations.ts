import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { WorkqError } from '../../errors.ts';
import { pinnedConnection } from './connection.ts';
import type { Tables } from './tables.ts';

/** One schema change. Append-only: a released migration is never edited, only followed by a new one. */
export interface Migration {
  version: number;
  name: string;
  /** Columns (name: definition) added to the jobs table first, each only where it is missing. */
  jobsColumns?: Record<string, string>;
  /** Indexes (name: columns) added to the jobs table next, each only where it is missing. */
  jobsIndexes?: Record<string, string>;
  /** Unique indexes (name: columns), added like `jobsIndexes`. */
  jobsUniqueIndexes?: Record<string, string>;
  /** Indexes of the jobs table dropped after those are added, each only where it is there. */
  jobsDroppedIndexes?: string[];
  /** Columns (name: definition) added to the settings table, each only where it is missing. */
  settingsColumns?: Record<string, string>;
  statements: string[];
}

/** Name of the index every claim reads; the claim query forces it. */
export const CLAIM_INDEX = 'claim_order';

/** Name of the index through which a limited claim finds a group's jobs in claim order. */
export const GROUP_INDEX = 'group_order';

/** Name of the index through which a limited claim found a grouped type's waiting jobs, group by group (migrations 11 to 14). */
export const WAITING_GROUP_INDEX = 'waiting_group_order';

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

/** Name of the index through which a claim finds the delayed jobs that came due. */
export const DELAYED_INDEX = 'delayed_due';

/**
 * The store's migrations, in order, for the given tables. Each statement is
 * safe to run again (`IF NOT EXISTS`), because MySQL commits DDL implicitly
 * and a crash may leave a migration half applied.
 */
export function migrations(t: Tables): readonly Migration[] {
  return [
    {
      version: 1,
      name: 'jobs, schemas and workers',
      statements: [
        // Text compares byte-wise (utf8mb4_bin). The idempotency key is VARBINARY so that
        // trailing spaces are significant (PAD SPACE collations would make 'a' equal 'a ').
        // The claim index leads with state and name, so finished history is never scanned, then
        // follows the claim order (the primary key, id, is implied last); run_at and version
        // trail it so scheduled or newer-version jobs are skipped within the index.
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
          PRIMARY KEY (id),
          KEY ${CLAIM_INDEX} (state, name, priority DESC, order_key, tie_key, id, run_at, version),
          KEY lease_expiry (state, lease_expires_at),
          KEY finished (finished_at),
          KEY listing (name, state, id),
          UNIQUE KEY idempotency (name, idempotency_key)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
        `CREATE TABLE IF NOT EXISTS ${t.schemas} (
          name VARCHAR(100) NOT NULL,
          version INT NOT NULL,
          fingerprint VARCHAR(255) NOT NULL,
          json_schema LONGTEXT NOT NULL,
          registered_at DATETIME(3) NOT NULL,
          PRIMARY KEY (name, version)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
        `CREATE TABLE IF NOT EXISTS ${t.workers} (
          id VARCHAR(255) NOT NULL,
          host VARCHAR(255) NOT NULL,
          name VARCHAR(100) NOT NULL,
          min_version INT NOT NULL,
          max_version INT NOT NULL,
          seen_at DATETIME(3) NOT NULL,
          PRIMARY KEY (id),
          KEY seen (seen_at)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      ],
    },
    {
      version: 2,
      name: 'wakeups',
      statements: [
        // Subscribers read by seq; trimming deletes by created_at (the server's UTC clock).
        `CREATE TABLE IF NOT EXISTS ${t.wakeups} (
          seq BIGINT NOT NULL AUTO_INCREMENT,
          message MEDIUMTEXT NOT NULL,
          created_at DATETIME(3) NOT NULL,
          PRIMARY KEY (seq),
          KEY created (created_at)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      ],
    },
    {
      version: 3,
      name: 'jobs due later wait outside the claim range',
      // A claim walks the claim index's waiting range in order and stepped over every job there not yet
      // due, so claims slowed down with every job scheduled for later. A job
      // written with a run time after its writer's clock is now stored `delayed`, with its run time also in
      // `delayed_until`, and each claim first moves its name's due ones into `waiting` through this index.
      // `delayed_until` is null on every other row, so claims and completions, which change the state, leave
      // the index alone (an index on the state would take two more entries per job). Jobs already waiting for
      // later move here, by the server's clock; any left `waiting` with a later run time are claimed only
      // when due.
      jobsColumns: { delayed_until: 'DATETIME(3) NULL' },
      jobsIndexes: { [DELAYED_INDEX]: 'name, delayed_until' },
      statements: [
        `UPDATE ${t.jobs} SET state = 'delayed', delayed_until = run_at
         WHERE state = 'waiting' AND run_at > UTC_TIMESTAMP(3)`,
      ],
    },
    {
      version: 4,
      name: 'leaders: one holder per role at a time, by renewable leases',
      statements: [
        `CREATE TABLE IF NOT EXISTS ${t.leaders} (
          role VARCHAR(191) NOT NULL,
          holder VARCHAR(191) NOT NULL,
          expires_at DATETIME(3) NOT NULL,
          PRIMARY KEY (role)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      ],
    },
    {
      version: 5,
      name: 'flow control: per-type settings, job groups and their turns',
      // A type's settings row is what limited claims of the type lock, one at a time (see flow-control.ts).
      // The group index leaves out the state, so claims and acks, which change only the state, never write it:
      // jobs without a group cost one index entry more to insert, and nothing more to claim.
      jobsColumns: { job_group: 'VARCHAR(255) NULL' },
      jobsIndexes: { [GROUP_INDEX]: 'name, job_group, priority DESC, order_key, tie_key, id' },
      statements: [
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
          PRIMARY KEY (name)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
        `CREATE TABLE IF NOT EXISTS ${t.queueGroups} (
          name VARCHAR(100) NOT NULL,
          job_group VARCHAR(255) NOT NULL,
          last_turn BIGINT NOT NULL,
          PRIMARY KEY (name, job_group)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      ],
    },
    {
      version: 7,
      name: 'idempotency keys that expire, and debounce keys',
      // A key with a TTL holds until `idempotency_expires_at`; after it, the next insert with the key clears it on
      // the old job and inserts. A debounce key is unique per type among the jobs holding one (NULLs do not
      // collide); an insert with it updates the holder while it waits, and clears it on one that started or
      // finished. The debounce key is VARBINARY for the reason the idempotency key is (see migration 1).
      jobsColumns: { idempotency_expires_at: 'DATETIME(3) NULL', debounce_key: 'VARBINARY(1020) NULL' },
      jobsUniqueIndexes: { debounce: 'name, debounce_key' },
      statements: [],
    },
    {
      version: 8,
      name: 'schedules kept in the store, their last runs, and the worker registry’s process id and start time',
      // The workers table holds only presence, which live consumers write again within seconds, so it is made
      // anew with the added columns (a drop and a create run again safely; MySQL 8 has no ADD COLUMN IF NOT
      // EXISTS). Servers of the previous version keep writing it: the added columns are nullable.
      statements: [
        `DROP TABLE IF EXISTS ${t.workers}`,
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
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
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
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
        `CREATE TABLE IF NOT EXISTS ${t.scheduleRuns} (
          schedule_key VARCHAR(220) NOT NULL,
          job_id VARCHAR(36) NOT NULL,
          run_at DATETIME(3) NOT NULL,
          PRIMARY KEY (schedule_key)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      ],
    },
    {
      version: 9,
      name: 'the trace context a job was created in',
      // Kept as given (a propagation carrier such as { traceparent, tracestate }, as JSON text) and returned by
      // claims, so the worker's span links to the producer's. Nullable: existing rows need no value.
      jobsColumns: { trace_context: 'TEXT NULL' },
      statements: [],
    },
    {
      version: 11,
      name: 'a grouped type’s waiting jobs indexed by group',
      // `group_order` holds every job, finished ones too, and not the state: a limited claim walked each group's
      // finished jobs before its waiting ones, and found the groups with waiting jobs by reading every waiting job.
      // `waiting_group` is the job's group while it waits and NULL otherwise, computed, not stored; its index
      // takes the old one's place. A job without a group keeps NULL through every state change, so its claims and
      // acks leave the index alone, as before; a grouped job enters it while waiting and leaves it when leased.
      jobsColumns: { waiting_group: "VARCHAR(255) AS (IF(state = 'waiting', job_group, NULL)) VIRTUAL" },
      jobsIndexes: { [WAITING_GROUP_INDEX]: 'name, waiting_group, priority DESC, order_key, tie_key, id' },
      jobsDroppedIndexes: [GROUP_INDEX],
      statements: [],
    },
    {
      version: 13,
      name: 'the job a moved job came from',
      // Set on the job moveJob inserts, so a job's page can link back to the job whose moveTo made it.
      jobsColumns: { moved_from: 'VARCHAR(36) NULL' },
      statements: [],
    },
    {
      version: 14,
      name: 'a grouped type’s groups with waiting jobs read one probe per group',
      // A limited claim lists the groups with waiting jobs. `waiting_group_order` orders each group's jobs with
      // a descending part, and MariaDB walks every waiting job of such an index instead of jumping from group to
      // group; this index of the group alone lets it jump.
      jobsIndexes: { [WAITING_GROUPS_INDEX]: 'name, waiting_group' },
      statements: [],
    },
    {
      version: 15,
      name: 'a group’s first ready job read from the index alone',
      // A limited claim picks each group's first job that is due and of a version it reads. `waiting_group_order`
      // holds neither the run time nor the version, so every pick read the job's row to check them; this index
      // takes its place with both at its end, as the claim index has them.
      jobsIndexes: {
        [WAITING_GROUP_CLAIM_INDEX]: 'name, waiting_group, priority DESC, order_key, tie_key, id, run_at, version',
      },
      jobsDroppedIndexes: [WAITING_GROUP_INDEX],
      statements: [],
    },
    {
      version: 16,
      name: 'groups take turns from a cursor: a grouped claim reads only the groups it passes',
      // A grouped claim listed every group with waiting jobs, with its active jobs and its last turn (kept in
      // `queue_groups`), and ordered them by turn, while it held the type's settings row: its work grew with the
      // number of groups, not with the jobs it leased. Round-robin needs no per-group turns. The settings row
      // keeps `group_cursor`, the last group the type's latest claim leased from; a claim walks `waiting_groups`
      // from just after it, wrapping round once, and stops once it has a group for each job it may lease (see
      // group-claim.ts). `active_group` is the job's group while it is leased, NULL otherwise, as `waiting_group`
      // is while it waits: its index counts one group's active jobs without reading the type's other active
      // jobs, and a job without a group keeps NULL, so its claims and acks leave the index alone.
      // `queue_groups` is left in place, no longer read or written, so that servers of the previous version
      // still claim grouped types while a deployment moves to this one.
      jobsColumns: { active_group: "VARCHAR(255) AS (IF(state = 'active', job_group, NULL)) VIRTUAL" },
      jobsIndexes: { [ACTIVE_GROUPS_INDEX]: 'name, active_group' },
      settingsColumns: { group_cursor: 'VARCHAR(255) NULL' },
      statements: [],
    },
    {
      version: 17,
      name: 'every failed attempt’s error',
      // The errors of a job's latest failed attempts (see ERROR_HISTORY_LIMITS), oldest first, as JSON text;
      // `error` stays the last. Nullable: a job failing again starts it from `error`.
      jobsColumns: { errors: 'LONGTEXT NULL' },
      statements: [],
    },
  ];
}

/**
 * Alters a table (`table`, escaped; `tableName`, as the catalog names it) by `change.sql` unless the column or
 * index it adds is there already, as a crashed run of its migration may have left it (MySQL 8 has no
 * `ADD COLUMN IF NOT EXISTS` or `ADD INDEX IF NOT EXISTS`).
 */
async function addTo(
  connection: PoolConnection,
  { table, tableName }: { table: string; tableName: string },
  change: ({ column: string } | { index: string }) & { sql: string },
): Promise<void> {
  const [existing] = await connection.query<RowDataPacket[]>(
    'column' in change
      ? 'SELECT 1 FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?'
      : 'SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?',
    [tableName, 'column' in change ? change.column : change.index],
  );
  if (existing.length === 0) await connection.query(`ALTER TABLE ${table} ${change.sql}`);
}

/** Drops an index of the jobs table unless a crashed run of its migration dropped it already. */
async function dropFromJobs(connection: PoolConnection, t: Tables, index: string): Promise<void> {
  const [existing] = await connection.query<RowDataPacket[]>(
    'SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?',
    [t.jobsName, index],
  );
  if (existing.length > 0) await connection.query(`ALTER TABLE ${t.jobs} DROP INDEX ${index}`);
}

const LOCK_TIMEOUT_S = 60;

/** A server-wide lock name for this database and table prefix (MySQL caps lock names at 64 characters). */
const LOCK_NAME = `LEFT(CONCAT('workq:', COALESCE(DATABASE(), ''), ':', ?), 64)`;

/**
 * Applies the migrations not yet recorded in the migrations table, under a
 * named lock so concurrent starts apply each one once. Running it again is a no-op.
 */
export async function migrate(pool: Pool, t: Tables): Promise<void> {
  const connection = await pinnedConnection(pool);
  try {
    const [locked] = await connection.query<RowDataPacket[]>(`SELECT GET_LOCK(${LOCK_NAME}, ?) AS locked`, [
      t.migrations,
      LOCK_TIMEOUT_S,
    ]);
    if (Number(locked[0]?.locked) !== 1) {
      throw new WorkqError(
        'UNAVAILABLE',
        `Waited ${LOCK_TIMEOUT_S} s for another process to finish migrating the workq tables; retry, or look for a stuck migration.`,
      );
    }
    try {
      await connection.query(
        `CREATE TABLE IF NOT EXISTS ${t.migrations} (
          version INT NOT NULL PRIMARY KEY,
          name VARCHAR(200) NOT NULL
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
      );
      const [rows] = await connection.query<RowDataPacket[]>(`SELECT version FROM ${t.migrations}`);
      const applied = new Set(rows.map((row) => Number(row.version)));
      const jobs = { table: t.jobs, tableName: t.jobsName };
      for (const migration of migrations(t)) {
        if (applied.has(migration.version)) continue;
        for (const [column, definition] of Object.entries(migration.jobsColumns ?? {})) {
          await addTo(connection, jobs, { column, sql: `ADD COLUMN ${column} ${definition}` });
        }
        for (const [index, columns] of Object.entries(migration.jobsIndexes ?? {})) {
          await addTo(connection, jobs, { index, sql: `ADD INDEX ${index} (${columns})` });
        }
        for (const [index, columns] of Object.entries(migration.jobsUniqueIndexes ?? {})) {
          await addTo(connection, jobs, { index, sql: `ADD UNIQUE INDEX ${index} (${columns})` });
        }
        for (const index of migration.jobsDroppedIndexes ?? []) {
          await dropFromJobs(connection, t, index);
        }
        for (const [column, definition] of Object.entries(migration.settingsColumns ?? {})) {
          const settings = { table: t.queueSettings, tableName: t.queueSettingsName };
          await addTo(connection, settings, { column, sql: `ADD COLUMN ${column} ${definition}` });
        }
        for (const statement of migration.statements) await connection.query(statement);
        await connection.query(`INSERT INTO ${t.migrations} (version, name) VALUES (?, ?)`, [
          migration.version,
          migration.name,
        ]);
      }
    } finally {
      // If this fails the connection is gone, and the server has released the lock with it.
      await connection.query(`SELECT RELEASE_LOCK(${LOCK_NAME})`, [t.migrations]).catch(() => undefined);
    }
  } finally {
    connection.release();
  }
}
