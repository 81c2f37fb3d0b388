import { freshMysqlDatabase, MYSQL_URL, mysqlUnreachableReason } from '@workq/test-support';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASELINE_VERSION } from '../src/stores/mysql/baseline.ts';
import { createMysqlStore } from '../src/stores/mysql/index.ts';
import { SCHEMA_VERSION } from '../src/stores/mysql/migrations.ts';
import { tableNames } from '../src/stores/mysql/tables.ts';
import chain from './fixtures/mysql-schema.json' with { type: 'json' };
import { newJob, rejection } from './support/fixtures.ts';
import { readMysqlCatalog } from './support/mysql-catalog.ts';

/**
 * What the pre-release migration chain built (steps 1 to 17), read from the catalog before the chain was
 * squashed, less `queue_groups`: the one table the baseline leaves out, which no build since step 16 used.
 */
const { queue_groups: _unused, ...preRelease } = chain;

/**
 * What the baseline adds to it, last in the jobs table: the index through which a job list filtered by group
 * reads, with the column that holds a grouped job's state (version 17); flows' parent link, policy and counts,
 * with the index through which a parent's children are read (version 18); whether a job's idempotency key frees
 * when it finishes (version 19); last in the settings table, when the type's hold ends (version 20); a
 * job's own retention, with when it is pruned by it, which leads the pruner's index `finished` (version 21); and
 * strict group order's held group and its index, and the settings' `group_order`; each job's time limit and
 * the deadline a claim sets its attempt (version 22).
 */
const expected = {
  ...preRelease,
  queue_settings: {
    ...preRelease.queue_settings,
    columns: [
      ...preRelease.queue_settings.columns,
      'held_until datetime(3) NULL DEFAULT NULL',
      'group_order varchar(8) NULL DEFAULT NULL COLLATE utf8mb4_bin',
    ],
  },
  jobs: {
    ...preRelease.jobs,
    columns: [
      ...preRelease.jobs.columns,
      'group_state varchar(16) NULL DEFAULT NULL AS (if(`job_group` is null,NULL,`state`)) VIRTUAL GENERATED COLLATE utf8mb4_bin',
      'parent_id varchar(36) NULL DEFAULT NULL COLLATE utf8mb4_bin',
      'on_failure varchar(16) NULL DEFAULT NULL COLLATE utf8mb4_bin',
      'child_count int(11) NOT NULL DEFAULT 0',
      'pending_children int(11) NOT NULL DEFAULT 0',
      'idempotency_until_finished tinyint(1) NOT NULL DEFAULT 0',
      'retain_completed_ms bigint(20) NULL DEFAULT NULL',
      'retain_dead_ms bigint(20) NULL DEFAULT NULL',
      "prune_at_ms bigint(20) NULL DEFAULT NULL AS (timestampdiff(MICROSECOND,'1970-01-01 00:00:00',`finished_at`) DIV 1000 + case `state` when 'completed' then `retain_completed_ms` when 'dead' then `retain_dead_ms` end) STORED GENERATED",
      "held_group varchar(255) NULL DEFAULT NULL AS (if(`attempts` > 0 and `state` in ('waiting','delayed'),`job_group`,NULL)) VIRTUAL GENERATED COLLATE utf8mb4_bin",
      'timeout_ms int(11) NULL DEFAULT NULL',
      'attempt_deadline datetime(3) NULL DEFAULT NULL',
    ],
    indexes: {
      ...preRelease.jobs.indexes,
      finished: 'prune_at_ms, finished_at',
      group_listing: 'job_group, group_state, id',
      children: 'parent_id, id',
      held_groups: 'name, held_group',
    },
  },
};

/** The steps the pre-release chain recorded in its ledger, the last one reaching version 17's schema. */
const PRE_RELEASE_STEPS = [1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 14, 15, 16, 17];

const skipReason = await mysqlUnreachableReason();
if (skipReason) console.log(`mysql schema tests: skipped — ${skipReason}`);

/** The fixture is MariaDB's catalog (MySQL 8 reports types and defaults in other words): compared on MariaDB only. */
const onMariaDb = skipReason === undefined && (await serverVersion()).includes('MariaDB');
if (skipReason === undefined && !onMariaDb) console.log('mysql schema fixture comparisons: skipped — not MariaDB');

async function serverVersion(): Promise<string> {
  const connection = await mysql.createConnection(MYSQL_URL);
  try {
    const [rows] = await connection.query<mysql.RowDataPacket[]>('SELECT VERSION() AS version');
    return String(rows[0]?.version);
  } finally {
    await connection.end();
  }
}

describe.skipIf(skipReason !== undefined)('mysql schema: one baseline, a version ledger', () => {
  let fresh: Awaited<ReturnType<typeof freshMysqlDatabase>>;
  let admin: mysql.Connection;

  beforeAll(async () => {
    fresh = await freshMysqlDatabase();
    admin = await mysql.createConnection(fresh.url);
  });

  afterAll(async () => {
    await admin?.end();
    await fresh?.drop();
  });

  /** Opens the store on `prefix` and closes it again: a server's start. */
  async function start(prefix: string): Promise<void> {
    const store = await createMysqlStore({ url: fresh.url, tablePrefix: prefix, wakeupPollMs: 0, poolSize: 1 });
    await store.close();
  }

  const catalog = (prefix: string) => readMysqlCatalog(admin, fresh.database, prefix, ['migrations']);

  async function ledger(prefix: string): Promise<unknown[]> {
    const [rows] = await admin.query<mysql.RowDataPacket[]>(
      `SELECT * FROM ${tableNames(prefix).migrations} ORDER BY version`,
    );
    return rows.map((row) => ({ ...row }));
  }

  /** Turns the ledger on `prefix` back into what a pre-release build left at `steps`' last one. */
  async function asPreRelease(prefix: string, steps: readonly number[]): Promise<void> {
    const t = tableNames(prefix);
    await admin.query(`DROP TABLE ${t.migrations}`);
    await admin.query(`CREATE TABLE ${t.migrations} (version INT NOT NULL PRIMARY KEY, name VARCHAR(200) NOT NULL)
      ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`);
    await admin.query(`INSERT INTO ${t.migrations} (version, name) VALUES ?`, [steps.map((v) => [v, `step ${v}`])]);
  }

  /** Turns the store's tables on `prefix` back into the previous baseline's (version 17): flows' columns gone. */
  async function asPreviousBaseline(prefix: string): Promise<void> {
    const t = tableNames(prefix);
    await admin.query(`DELETE FROM ${t.migrations}`);
    await admin.query(`INSERT INTO ${t.migrations} (version, name, min_server_version) VALUES (17, 'baseline', 17)`);
    await admin.query(`ALTER TABLE ${t.jobs} DROP INDEX children, DROP COLUMN parent_id, DROP COLUMN on_failure,
      DROP COLUMN child_count, DROP COLUMN pending_children`);
  }

  it.runIf(onMariaDb)(
    'builds on an empty database what the pre-release migration chain built, the group listing index and flows, and records the baseline',
    async () => {
      await start('fresh_');
      expect(await catalog('fresh_')).toEqual(expected);
      expect(await ledger('fresh_')).toEqual([
        { version: BASELINE_VERSION, name: 'baseline', min_server_version: BASELINE_VERSION },
      ]);
    },
  );

  it('refuses tables of an earlier schema, the previous baseline or the pre-release chain, and leaves them as they were', async () => {
    await start('earlier_');
    await asPreviousBaseline('earlier_');
    // The previous baseline's ledger, then the pre-release chain's: both end at version 17.
    for (const stage of [() => Promise.resolve(), () => asPreRelease('earlier_', PRE_RELEASE_STEPS)]) {
      await stage();
      const before = { tables: await catalog('earlier_'), ledger: await ledger('earlier_') };
      const error = await rejection(start('earlier_'));
      expect(error.code).toBe('UNSUPPORTED_VERSION');
      expect(error.retryable).toBe(false);
      expect(error.message).toMatch(
        /pre-release build of workq, at schema version 17, which this version cannot upgrade/,
      );
      expect(error.message).toMatch(/Recreate them/);
      expect({ tables: await catalog('earlier_'), ledger: await ledger('earlier_') }).toEqual(before);
    }
  });

  it('refuses a database an older pre-release build made, saying to recreate it, and leaves it as it was', async () => {
    const t = tableNames('older_');
    await start('older_');
    await asPreRelease('older_', PRE_RELEASE_STEPS.slice(0, -1));
    await admin.query(`ALTER TABLE ${t.jobs} DROP COLUMN errors`);
    const before = { tables: await catalog('older_'), ledger: await ledger('older_') };
    const error = await rejection(start('older_'));
    expect(error.code).toBe('UNSUPPORTED_VERSION');
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(
      /pre-release build of workq, at schema version 16, which this version cannot upgrade/,
    );
    expect(error.message).toMatch(/Recreate them/);
    expect({ tables: await catalog('older_'), ledger: await ledger('older_') }).toEqual(before);
  });

  it('refuses jobs a pre-release build made before it recorded a step, rather than take them for the baseline', async () => {
    const t = tableNames('unrecorded_');
    await start('unrecorded_');
    await admin.query(`DELETE FROM ${t.migrations}`);
    await admin.query(`ALTER TABLE ${t.jobs} DROP COLUMN errors`);
    const error = await rejection(start('unrecorded_'));
    expect(error.code).toBe('UNSUPPORTED_VERSION');
    expect(error.message).toMatch(/pre-release build of workq, at schema version 0/);
  });

  it.runIf(onMariaDb)('completes a baseline a crash left half built', async () => {
    const t = tableNames('half_');
    await start('half_');
    await admin.query(`DELETE FROM ${t.migrations}`);
    await admin.query(`DROP TABLE ${t.schedules}, ${t.scheduleRuns}, ${t.queueSettings}`);
    await start('half_');
    expect(await catalog('half_')).toEqual(expected);
    expect(await ledger('half_')).toHaveLength(1);
  });

  it('refuses to start under a database that asks for a newer server, and runs beside a newer schema that does not', async () => {
    const t = tableNames('versions_');
    await start('versions_');
    const next = SCHEMA_VERSION + 1;
    await admin.query(`INSERT INTO ${t.migrations} (version, name, min_server_version) VALUES (?, ?, ?)`, [
      next,
      'a released change older servers can run beside',
      SCHEMA_VERSION,
    ]);
    const store = await createMysqlStore({ url: fresh.url, tablePrefix: 'versions_', wakeupPollMs: 0 });
    try {
      const [outcome] = await store.insertJobs([newJob('versioned')]);
      expect((await store.getJob(outcome!.job!.id))?.state).toBe('waiting');
    } finally {
      await store.close();
    }
    await admin.query(`INSERT INTO ${t.migrations} (version, name, min_server_version) VALUES (?, ?, ?)`, [
      next + 1,
      'a released change older servers cannot run beside',
      next + 1,
    ]);
    const error = await rejection(start('versions_'));
    expect(error.code).toBe('UNSUPPORTED_VERSION');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(
      `at schema version ${next + 1} and needs servers of schema version ${next + 1} or later, but this server's @workq/core knows version ${SCHEMA_VERSION}`,
    );
  });
});
