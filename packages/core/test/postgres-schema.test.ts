import { readdirSync, readFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { postgresUnreachableReason, POSTGRES_URL as url } from '@workq/test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/engine/store.ts';
import { BASELINE } from '../src/stores/postgres/baseline.ts';
import { openPgliteStore } from '../src/stores/postgres/create-store.ts';
import { createPostgresStore } from '../src/stores/postgres/index.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../src/stores/postgres/migrations.ts';
import { pgliteTemplateFor } from '../src/stores/postgres/pglite-template.ts';
import { type PostgresCatalog, readPostgresCatalog } from './support/postgres-catalog.ts';

/**
 * The drift test. `fixtures/postgres-schema.json` is the catalog the pre-release chain of migrations (1 to 24)
 * made, captured before the chain was replaced by the baseline, less the two claim functions the baseline
 * drops (`claim_limited_jobs`, `group_heads_after`). The schema of this version is that, plus the index and the
 * function added since (`SINCE_PRE_RELEASE`), and the flows' columns, index, constraints and functions
 * (`fixtures/postgres-schema-flows.json`, which also holds `complete_jobs` as flows changed it), the type's
 * hold (`fixtures/postgres-schema-holds.json`: the settings table and the two claims as it changed them), a
 * job's own retention (`SINCE_RETENTION`), and strict group order's column, index and claim
 * (`fixtures/postgres-schema-strict.json`), and the completion that counts a flow's parents down from its own
 * update (`fixtures/postgres-schema-count-down.json`). A fresh install
 * must make exactly that. A schema of an earlier build (`fixtures/postgres-{pre-release,release}-<version>.sql`,
 * a dump of it with its `migrations` rows; today only the last pre-release one) has no migration to this
 * version: a store refuses it, leaving it as it was.
 */
const fixtures = new URL('./fixtures/', import.meta.url);
const PRE_RELEASE = JSON.parse(readFileSync(new URL('postgres-schema.json', fixtures), 'utf8')) as PostgresCatalog;
/**
 * What the baseline adds to the pre-release chain's end: the index a job list filtered by group reads, and the
 * plain claim that leases nothing of a type whose settings hold its claims back.
 */
const SINCE_PRE_RELEASE: Pick<PostgresCatalog, 'indexes' | 'functions'> = {
  indexes: {
    'jobs.jobs_group_list_idx':
      'CREATE INDEX jobs_group_list_idx ON $SCHEMA.jobs USING btree (job_group, state, id) WHERE (job_group IS NOT NULL)',
  },
  functions: {
    'claim_jobs_unless_held(job_name text, due_by timestamp with time zone, min_version integer, max_version integer, max_jobs integer, new_lease_token text, new_worker_id text, lease_ms_override bigint)':
      [
        'CREATE OR REPLACE FUNCTION $SCHEMA.claim_jobs_unless_held(job_name text, due_by timestamp with time zone, min_version integer, max_version integer, max_jobs integer, new_lease_token text, new_worker_id text, lease_ms_override bigint)',
        ' RETURNS SETOF $SCHEMA.jobs',
        ' LANGUAGE plpgsql',
        ' ROWS 100',
        " SET search_path TO '$SCHEMA'",
        'AS $function$ BEGIN',
        '  IF EXISTS (SELECT 1 FROM queue_settings AS q WHERE q.name = job_name AND (q.paused OR q.grouped',
        '    OR q.concurrency IS NOT NULL OR q.rate_max IS NOT NULL OR q.group_concurrency IS NOT NULL)) THEN',
        '    RETURN NEXT NULL::jobs;',
        '    RETURN;',
        '  END IF;',
        '  RETURN QUERY SELECT * FROM claim_jobs(job_name, due_by, min_version, max_version, max_jobs, new_lease_token,',
        '    new_worker_id, lease_ms_override); END $function$',
        '',
      ].join('\n'),
  },
};
/** What flows added to the jobs table and its functions (the jobs table's entry, and each object, as a whole). */
const SINCE_FLOWS = JSON.parse(readFileSync(new URL('postgres-schema-flows.json', fixtures), 'utf8')) as Pick<
  PostgresCatalog,
  'tables' | 'indexes' | 'constraints' | 'functions'
>;
/** What version 26 added: the column saying a job's idempotency key frees when the job finishes. */
const SINCE_FLOWS_JOBS = SINCE_FLOWS.tables.jobs as PostgresCatalog['tables'][string];
const SINCE_UNTIL_FINISHED: PostgresCatalog['tables'] = {
  jobs: {
    ...SINCE_FLOWS_JOBS,
    columns: [
      ...SINCE_FLOWS_JOBS.columns,
      {
        ...(SINCE_FLOWS_JOBS.columns.find(
          (column) => column.name === 'child_count',
        ) as (typeof SINCE_FLOWS_JOBS.columns)[number]),
        name: 'idempotency_until_finished',
        type: 'boolean',
        default: 'false',
      },
    ],
  },
};
/**
 * What the type's hold added (schema version 27): `queue_settings.held_until`, and the two claims that honour it
 * (`claim_jobs_unless_held`, `claim_under_limits`), each as a whole.
 */
const SINCE_HOLDS = JSON.parse(readFileSync(new URL('postgres-schema-holds.json', fixtures), 'utf8')) as Pick<
  PostgresCatalog,
  'tables' | 'functions'
>;
/**
 * What a job's own retention added (schema version 28): its two columns and `prune_at`, computed from them (through `ms_after`),
 * which the pruner reads through `jobs_prune_at_idx`; the server-wide prune's index leaves those jobs out.
 */
const column = (name: string, type: string, generated = '') => ({
  collation: null,
  default: generated === '' ? null : generated,
  generated: generated === '' ? '' : 's',
  identity: '',
  name,
  notNull: false,
  type,
});
const SINCE_RETENTION = {
  columns: [
    column('retain_completed_ms', 'bigint'),
    column('retain_dead_ms', 'bigint'),
    column(
      'prune_at',
      'timestamp with time zone',
      [
        '',
        'CASE state',
        "    WHEN 'completed'::text THEN $SCHEMA.ms_after(finished_at, retain_completed_ms)",
        "    WHEN 'dead'::text THEN $SCHEMA.ms_after(finished_at, retain_dead_ms)",
        '    ELSE NULL::timestamp with time zone',
        'END',
      ].join('\n'),
    ),
  ],
  indexes: {
    'jobs.jobs_finished_at_idx':
      'CREATE INDEX jobs_finished_at_idx ON $SCHEMA.jobs USING btree (finished_at) WHERE ((finished_at IS NOT NULL) AND (prune_at IS NULL))',
    'jobs.jobs_prune_at_idx':
      'CREATE INDEX jobs_prune_at_idx ON $SCHEMA.jobs USING btree (prune_at) WHERE (prune_at IS NOT NULL)',
  },
  functions: {
    'ms_after(at timestamp with time zone, ms bigint)': [
      'CREATE OR REPLACE FUNCTION $SCHEMA.ms_after(at timestamp with time zone, ms bigint)',
      ' RETURNS timestamp with time zone',
      ' LANGUAGE sql',
      ' IMMUTABLE PARALLEL SAFE STRICT',
      "RETURN (at + ((ms)::double precision * '00:00:00.001'::interval))",
      '',
    ].join('\n'),
  },
};
/**
 * What strict group order added: the settings table with `group_order`, the index of jobs that hold their groups,
 * its check, and `claim_under_limits` as it changed (each object as a whole).
 */
const SINCE_STRICT = JSON.parse(readFileSync(new URL('postgres-schema-strict.json', fixtures), 'utf8')) as Pick<
  PostgresCatalog,
  'tables' | 'indexes' | 'constraints' | 'functions'
>;
/**
 * What a job's time limit added (schema version 29): its two columns, and the claims and the sweep that read them
 * (`fixtures/postgres-schema-time-limits.json`: those functions as a whole; the sweep's replaces the one of two
 * parameters).
 */
const SINCE_TIME_LIMITS = JSON.parse(
  readFileSync(new URL('postgres-schema-time-limits.json', fixtures), 'utf8'),
) as Pick<PostgresCatalog, 'functions'>;
/**
 * What counting a completed child's parent down from the completion's own update changed (no schema version of its
 * own: the functions' signatures held): `count_down_parents`, and `complete_jobs` and `settle_parents`, which call
 * it, each as a whole.
 */
const SINCE_COUNT_DOWN = JSON.parse(readFileSync(new URL('postgres-schema-count-down.json', fixtures), 'utf8')) as Pick<
  PostgresCatalog,
  'functions'
>;
const TIME_LIMIT_COLUMNS = [column('timeout_ms', 'bigint'), column('attempt_deadline', 'timestamp with time zone')];
const SWEEP_BEFORE_TIME_LIMITS = 'requeue_expired_leases(done_at timestamp with time zone, failure text)';
const withoutSweepBefore = (functions: PostgresCatalog['functions']) =>
  Object.fromEntries(Object.entries(functions).filter(([key]) => key !== SWEEP_BEFORE_TIME_LIMITS));
const byName = <T>(record: Record<string, T>) =>
  Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1)));
const EXPECTED: PostgresCatalog = {
  ...PRE_RELEASE,
  tables: byName({
    ...PRE_RELEASE.tables,
    ...SINCE_FLOWS.tables,
    ...SINCE_UNTIL_FINISHED,
    ...SINCE_HOLDS.tables,
    jobs: {
      ...(SINCE_UNTIL_FINISHED.jobs as PostgresCatalog['tables'][string]),
      columns: [...(SINCE_UNTIL_FINISHED.jobs?.columns ?? []), ...SINCE_RETENTION.columns, ...TIME_LIMIT_COLUMNS],
    },
    ...SINCE_STRICT.tables,
  }),
  indexes: byName({
    ...PRE_RELEASE.indexes,
    ...SINCE_PRE_RELEASE.indexes,
    ...SINCE_FLOWS.indexes,
    ...SINCE_RETENTION.indexes,
    ...SINCE_STRICT.indexes,
  }),
  constraints: byName({ ...PRE_RELEASE.constraints, ...SINCE_FLOWS.constraints, ...SINCE_STRICT.constraints }),
  functions: byName({
    ...withoutSweepBefore({
      ...PRE_RELEASE.functions,
      ...SINCE_PRE_RELEASE.functions,
      ...SINCE_FLOWS.functions,
      ...SINCE_HOLDS.functions,
      ...SINCE_RETENTION.functions,
      ...SINCE_STRICT.functions,
    }),
    ...SINCE_TIME_LIMITS.functions,
    ...SINCE_COUNT_DOWN.functions,
  }),
};
const EARLIER_SCHEMAS = readdirSync(fixtures).filter((file) => /^postgres-(pre-)?release-\d+\.sql$/.test(file));
const dumpOf = (file: string, schema: string) =>
  readFileSync(new URL(file, fixtures), 'utf8').replaceAll('__schema__', schema);

/** One engine: statements on it, and a store opened on one of its schemas. */
interface Engine {
  query<Row>(text: string, params?: unknown[]): Promise<Row[]>;
  /** Runs a script of several statements. */
  exec(script: string): Promise<void>;
  open(schema: string): Promise<Store>;
}

const skipReason = await postgresUnreachableReason();
if (skipReason) console.log(`postgres schema tests: skipped on PostgreSQL — ${skipReason}`);

let admin: pg.Pool | undefined;
let lite: PGlite | undefined;
const engines: { label: string; skip: boolean; engine: () => Engine }[] = [
  {
    label: 'PostgreSQL',
    skip: skipReason !== undefined,
    engine: () => {
      const pool = admin as pg.Pool;
      return {
        query: async (text, params) => (await pool.query(text, params)).rows,
        exec: async (script) => void (await pool.query(script)),
        open: (schema) => createPostgresStore({ pool, schema }),
      };
    },
  },
  {
    label: 'PGlite',
    skip: false,
    engine: () => {
      const db = lite as PGlite;
      return {
        query: async <Row>(text: string, params?: unknown[]) => (await db.query<Row>(text, params)).rows,
        exec: async (script) => void (await db.exec(script)),
        open: (schema) => openPgliteStore(db, { schema, ownsDb: false }),
      };
    },
  },
];

beforeAll(async () => {
  if (!skipReason) admin = new pg.Pool({ connectionString: url, max: 3 });
  lite = await PGlite.create(await pgliteTemplateFor(undefined));
});
afterAll(async () => {
  await admin?.end();
  await lite?.close();
});

describe.each(engines)('the PostgreSQL schema on $label', ({ skip, engine }) => {
  const schemas: string[] = [];
  const fresh = (label: string) => {
    const schema = `workq_drift_${label}_${Math.random().toString(36).slice(2, 8)}`;
    schemas.push(schema);
    return schema;
  };
  /** Opens a store on `schema` and closes it: what a server's start does to the schema. */
  const start = async (schema: string) => (await engine().open(schema)).close();
  const catalogOf = (schema: string) =>
    readPostgresCatalog((text, params) => engine().query(text, params), schema, ['migrations']);
  const recorded = (schema: string) =>
    engine().query<{ version: number; min_server_version: number | null }>(
      `SELECT version, min_server_version FROM "${schema}".migrations ORDER BY version`,
    );

  afterAll(async () => {
    if (skip) return;
    for (const schema of schemas) await engine().exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });

  it.skipIf(skip)(
    'a fresh install makes the schema the pre-release chain made and what was added since, and records the baseline',
    async () => {
      const schema = fresh('new');
      await start(schema);
      expect(await catalogOf(schema)).toEqual(EXPECTED);
      expect(await recorded(schema)).toEqual([
        { version: SCHEMA_VERSION, min_server_version: BASELINE.minServerVersion },
      ]);
    },
  );

  it.skipIf(skip).each(EARLIER_SCHEMAS)(
    'a schema at %s is refused, saying how to recreate it, and left as it was',
    async (file) => {
      const schema = fresh('old');
      await engine().exec(dumpOf(file, schema));
      const before = await catalogOf(schema);
      const error = await start(schema).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'WorkqError', code: 'UNSUPPORTED_VERSION', retryable: false });
      expect((error as Error).message).toContain(`DROP SCHEMA "${schema}" CASCADE`);
      expect(await catalogOf(schema)).toEqual(before);
    },
  );

  it.skipIf(skip)(
    "refuses a schema of an earlier baseline with no migration from it (before flows'), and leaves it as it was",
    async () => {
      const schema = fresh('baseline');
      await start(schema);
      await engine().query(`UPDATE "${schema}".migrations SET version = 24, min_server_version = 24`);
      const error = await start(schema).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'WorkqError', code: 'UNSUPPORTED_VERSION', retryable: false });
      expect((error as Error).message).toContain('an earlier development build of workq (schema version 24)');
      expect(await recorded(schema)).toEqual([{ version: 24, min_server_version: 24 }]);
    },
  );

  it.skipIf(skip)(
    'refuses an older pre-release schema, saying how to recreate it, and leaves it as it was',
    async () => {
      const schema = fresh('older');
      await engine().exec(dumpOf('postgres-pre-release-24.sql', schema));
      await engine().exec(`DELETE FROM "${schema}".migrations WHERE version > 22`);
      const before = await catalogOf(schema);
      const error = await start(schema).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'WorkqError', code: 'UNSUPPORTED_VERSION', retryable: false });
      expect((error as Error).message).toContain('schema version 22');
      expect((error as Error).message).toContain(`DROP SCHEMA "${schema}" CASCADE`);
      expect(await catalogOf(schema)).toEqual(before);
      expect(Object.keys(before.functions).some((name) => name.startsWith('claim_limited_jobs('))).toBe(true);
    },
  );

  it.skipIf(skip)(
    "a server older than the schema's minServerVersion refuses to start; one it allows runs",
    async () => {
      const schema = fresh('min');
      await start(schema);
      const newer = SCHEMA_VERSION + 1;
      await engine().query(
        `INSERT INTO "${schema}".migrations (version, name, min_server_version) VALUES ($1, $2, $3)`,
        [newer, 'a change older servers cannot run beside', newer],
      );
      const error = await start(schema).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'WorkqError', code: 'UNSUPPORTED_VERSION', retryable: false });
      expect((error as Error).message).toContain(`needs servers of schema version ${newer} or later`);
      expect((error as Error).message).toContain(`knows version ${SCHEMA_VERSION}: upgrade it`);

      await engine().query(`UPDATE "${schema}".migrations SET min_server_version = $1 WHERE version = $2`, [
        SCHEMA_VERSION,
        newer,
      ]);
      await start(schema);
      expect((await recorded(schema)).map((row) => row.version)).toEqual([SCHEMA_VERSION, newer]);
    },
  );
});

describe('the migrations after the baseline', () => {
  it('ascend, end at the baseline, and never lower the oldest server allowed', () => {
    let previous = { version: 0, minServerVersion: 0 };
    for (const migration of MIGRATIONS) {
      expect(migration.version).toBeGreaterThan(previous.version);
      expect(migration.minServerVersion).toBeGreaterThanOrEqual(previous.minServerVersion);
      expect(migration.minServerVersion).toBeLessThanOrEqual(migration.version);
      previous = migration;
    }
    expect(MIGRATIONS.at(-1)?.version ?? BASELINE.version).toBe(BASELINE.version);
    expect(BASELINE.minServerVersion).toBeLessThanOrEqual(BASELINE.version);
  });
});
