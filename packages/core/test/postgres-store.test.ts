import { PGlite } from '@electric-sql/pglite';
import { postgresUnreachableReason, POSTGRES_URL as url, waitFor } from '@workq/test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine/engine.ts';
import type { Store } from '../src/engine/store.ts';
import { WorkqError } from '../src/errors.ts';
import { completeAndClaimStatement } from '../src/stores/postgres/complete-and-claim.ts';
import { createPoolSqlClient } from '../src/stores/postgres/connection.ts';
import { openPgliteStore } from '../src/stores/postgres/create-store.ts';
import { buildFlowStatements } from '../src/stores/postgres/flow-control.ts';
import { buildFlowJobStatements } from '../src/stores/postgres/flows.ts';
import { createPgliteStore, createPostgresStore } from '../src/stores/postgres/index.ts';
import { buildListJobs } from '../src/stores/postgres/list-jobs.ts';
import { SCHEMA_VERSION } from '../src/stores/postgres/migrations.ts';
import { channelOf } from '../src/stores/postgres/notifier.ts';
import type { PostgresStore } from '../src/stores/postgres/postgres-store.ts';
import {
  NEW_JOB_FIELDS,
  newJobParams,
  newJobValues,
  PER_JOB_FIELDS,
  SETTINGS_FIELDS,
} from '../src/stores/postgres/records.ts';
import { claimJobsSql } from '../src/stores/postgres/sql/claim-jobs.ts';
import { sweptLeasesSql } from '../src/stores/postgres/sql/end-jobs.ts';
import { buildStatements } from '../src/stores/postgres/statements.ts';
import { expectUnreachable, newJob } from './support/fixtures.ts';

const skipReason = await postgresUnreachableReason();
const serverUp = skipReason === undefined;
if (skipReason) console.log(`postgres store tests: skipped — ${skipReason}`);

describe.skipIf(!serverUp)('postgres store (node-postgres)', () => {
  const schema = `workq_t_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  const stores: Store[] = [];
  const open = async () => {
    const store = await createPostgresStore({ connectionString: url, schema, poolSize: 2 });
    stores.push(store);
    return store;
  };

  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  it('migrates once under two concurrent starts, and re-running is a no-op', async () => {
    await Promise.all([open(), open()]);
    const applied = await admin.query(`SELECT version FROM "${schema}".migrations`);
    expect(applied.rows).toEqual([{ version: SCHEMA_VERSION }]);
    await open();
    expect((await admin.query(`SELECT version FROM "${schema}".migrations`)).rows).toEqual(applied.rows);
  });

  /** `count` jobs of `name` written straight into the table: completed (a kept history) or waiting. */
  const insertJobRows = async (
    name: string,
    state: 'completed' | 'waiting' = 'completed',
    into = schema,
    count = 20_000,
  ) => {
    await admin.query(
      `INSERT INTO "${into}".jobs (id, name, version, payload, state, priority, job_order, order_key, run_at, created_at,
         updated_at, max_attempts, backoff, lease_ms, finished_at)
       SELECT $1 || lpad(n::text, 8, '0'), $1, 1, '{}', $2, 0, 'fifo', n, to_timestamp(n), to_timestamp(n),
         to_timestamp(n), 1, '{"type":"fixed","delayMs":0}', 30000, CASE WHEN $2 = 'completed' THEN to_timestamp(n) END
       FROM generate_series(1, $3::int) AS n`,
      [name, state, count],
    );
  };
  const insertCompletedHistory = (name: string) => insertJobRows(name, 'completed');

  /**
   * The buffers a claim of `limit` jobs of `name` reads, run under EXPLAIN ANALYZE and rolled back. The
   * second of two claims counts: the first also reads the catalog, once per connection. `claimed`: how many
   * jobs the claim is expected to find, all `limit` unless given.
   */
  const claimBuffers = async (name: string, limit: number, from = schema, claimed = limit): Promise<number> => {
    const claimParams = [name, new Date('2026-01-02T00:00:00.000Z'), 1, 1, limit, 'token', 'worker', null];
    const explain = `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${claimJobsSql(`"${from}"`, false)}`;
    const connection = await admin.connect();
    try {
      await connection.query('BEGIN');
      await connection.query(explain, claimParams);
      const { rows } = await connection.query(explain, claimParams);
      const plan = rows[0]['QUERY PLAN'][0].Plan as Record<string, number>;
      expect(plan['Actual Rows']).toBe(claimed);
      return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
    } finally {
      await connection.query('ROLLBACK');
      connection.release();
    }
  };

  /**
   * Runs a statement with auto_explain reporting every plan, nested ones (inside functions) too, with actual
   * rows; `undefined` where the server cannot load auto_explain. The connection is closed afterwards.
   */
  const explainedPlans = async (text: string, params: unknown[]) => {
    const connection = await admin.connect();
    const plans: string[] = [];
    const onNotice = (notice: { message?: string }) => {
      if (notice.message?.includes('Query Text:')) plans.push(notice.message);
    };
    try {
      try {
        await connection.query(`LOAD 'auto_explain'`);
      } catch {
        return undefined;
      }
      for (const setting of ['log_min_duration = 0', 'log_nested_statements = on', 'log_analyze = on']) {
        await connection.query(`SET auto_explain.${setting}`);
      }
      await connection.query('SET client_min_messages = log');
      connection.on('notice', onNotice);
      const { rows } = await connection.query(text, params);
      return { rows, plans };
    } finally {
      connection.off('notice', onNotice);
      connection.release(true);
    }
  };

  const planOf = async (text: string, params: unknown[]) =>
    (await admin.query(`EXPLAIN ${text}`, params)).rows
      .map((row: Record<string, string>) => row['QUERY PLAN'])
      .join('\n');

  it('cancels a running child with its flow though another transaction holds its row for a moment', async () => {
    const engine = createEngine({ store: await open(), leaseSweepIntervalMs: 0 });
    const children = [{ name: 'held-child', version: 1, payload: {} }];
    const parent = await engine.flows.enqueue({ name: 'held-parent', version: 1, payload: {}, children });
    const [child] = await engine.claim({ name: 'held-child', maxVersion: 1, limit: 1, workerId: 'w1' });
    // A write that does not end the job (a lease extension, progress) holds its row while the parent is cancelled.
    const holder = await admin.connect();
    const holderPid = (await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await holder.query('BEGIN');
    await holder.query(`SELECT id FROM "${schema}".jobs WHERE id = $1 FOR UPDATE`, [child!.id]);
    // Let go once the cancel waits for that row (or after 2 s), whatever the machine's load makes of the timing.
    const blocked = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`;
    const released = (async () => {
      const deadline = Date.now() + 2_000;
      while (Date.now() < deadline && (await admin.query(blocked, [holderPid])).rows[0].n === 0) {
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await holder.query('COMMIT');
    })().finally(() => holder.release());
    expect(await engine.cancel(parent.id)).toBe(true);
    await released;
    expect(await engine.get(child!.id)).toMatchObject({ state: 'cancelled', error: { code: 'FLOW_CANCELLED' } });
  });

  it('claims through the partial claim index, whatever the finished history', async () => {
    const store = stores[0] ?? (await open());
    const name = 'explain.claim';
    await insertCompletedHistory(name);
    await store.insertJobs(Array.from({ length: 500 }, (_, n) => newJob(name, { priority: n % 5 })));
    await admin.query(`ANALYZE "${schema}".jobs`);
    // 20,000 finished rows span about 600 pages; a claim of ten finds, leases and indexes its jobs in about 130.
    expect(await claimBuffers(name, 10)).toBeLessThan(200);
  });

  it('claims without stepping over jobs due later, fifo or lifo', async () => {
    const store = stores[0] ?? (await open());
    const later = new Date('2026-02-01T00:00:00.000Z');
    for (const order of ['fifo', 'lifo'] as const) {
      const name = `explain.later.${order}`;
      await store.insertJobs(Array.from({ length: 5_000 }, () => newJob(name, { order, runAt: later })));
      // Eleven due: the second of claimBuffers' two claims finds one, and looks on for nine more.
      await store.insertJobs(Array.from({ length: 11 }, () => newJob(name, { order })));
      // Stepping over the later jobs in the claim index reads their rows, about 270-300 pages; a claim that
      // leaves them out reads under 30.
      expect(await claimBuffers(name, 10, schema, 1)).toBeLessThan(100);
    }
  });

  it('decides a handoff once per insert, however many columns the decision sets', async () => {
    stores[0] ?? (await open());
    const job = newJob('explain.handoff');
    const now = new Date();
    const params = [...newJobValues(job), now, 1, 1, 'token', 'worker', new Date(now.getTime() + 30_000)];
    const plan = await planOf(buildStatements(`"${schema}"`).insertAndClaimJob, params);
    // One look for a ready job, one for a due delayed one and one for the type's settings. A decision inlined
    // into each column that reads it (state, attempts, the three lease columns and the attempt's deadline)
    // repeats each look six times.
    expect(plan.match(/InitPlan|SubPlan/g)).toHaveLength(3);
  });

  it('types each insert parameter as the column it fills, so a value is parsed once, not for every row', async () => {
    stores[0] ?? (await open());
    const { rows: columns } = await admin.query(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'jobs'`,
      [schema],
    );
    const typeOf = new Map(columns.map((column) => [column.column_name, column.data_type]));
    const scalars = (fields: readonly string[]) => fields.map((field) => typeOf.get(field));
    // An array of jsonb values goes as text[], each element cast in its row: jsonb[] input is slower.
    const arrays = (fields: readonly string[]) =>
      fields.map((field) => `${typeOf.get(field) === 'jsonb' ? 'text' : typeOf.get(field)}[]`);
    const parameterTypes = async (text: string): Promise<string[]> => {
      const connection = await admin.connect();
      try {
        await connection.query(`PREPARE typed AS ${text}`);
        const { rows } = await connection.query(
          `SELECT parameter_types::text[] AS types FROM pg_prepared_statements WHERE name = 'typed'`,
        );
        return rows[0].types;
      } finally {
        connection.release(true);
      }
    };
    const sql = buildStatements(`"${schema}"`);
    for (const text of [sql.insertJobs, sql.insertJobsWithoutKeys]) {
      expect(await parameterTypes(text)).toEqual(arrays(NEW_JOB_FIELDS));
    }
    for (const text of [sql.insertAlikeJobs, sql.insertAlikeJobsWithoutKeys]) {
      expect(await parameterTypes(text)).toEqual([...arrays(PER_JOB_FIELDS), ...scalars(SETTINGS_FIELDS)]);
    }
    expect((await parameterTypes(sql.insertAndClaimJob)).slice(0, NEW_JOB_FIELDS.length)).toEqual(
      scalars(NEW_JOB_FIELDS),
    );
  });

  it('inserts a flow in one plain insert of all its jobs, its values typed as the columns they fill', async () => {
    stores[0] ?? (await open());
    const at = new Date().toISOString();
    const [root, child] = ['flow-plan-root', 'flow-plan-child'];
    const jobs = [
      [root, child],
      ['plan.parent', 'plan.child'],
      ['1', '1'],
      ['{}', '{}'],
      ['0', '0'],
      ['fifo', 'fifo'],
      [at, at],
      [at, at],
      ['3', '3'],
      ['{"type":"fixed","delayMs":0}', '{"type":"fixed","delayMs":0}'],
      ['30000', '30000'],
      null,
      null,
      null,
      [null, root],
      [null, 'fail-parent'],
      ['1', '0'],
      null,
    ];
    const insertFlow = buildFlowJobStatements(`"${schema}"`).insertFlow;
    const plan = await planOf(insertFlow, [...jobs, 'plan-key', null, false]);
    // A speculative insert of the root under its key and a second insert of the jobs below it cost PostgreSQL
    // more than one insert of the whole flow, whose unique index refuses a taken key as it refuses a taken id.
    expect(plan.match(/Insert on/g)).toHaveLength(1);
    expect(plan).not.toMatch(/Conflict/);
    const connection = await admin.connect();
    try {
      await connection.query(`PREPARE flow_typed AS ${insertFlow}`);
      const { rows } = await connection.query(
        `SELECT parameter_types::text[] AS types FROM pg_prepared_statements WHERE name = 'flow_typed'`,
      );
      // Each value parsed once as the statement binds it; the JSON fields go as text, cast in their rows.
      const [text, int, time, bigint] = ['text[]', 'integer[]', 'timestamp with time zone[]', 'bigint[]'];
      expect(rows[0].types.slice(0, 18)).toEqual([
        ...[text, text, int, text, int, text, time, time, int, text, bigint],
        ...[text, text, text, text, text, int, bigint],
      ]);
    } finally {
      connection.release(true);
    }
  });

  it('sends a per-job field no job of a batch has as one NULL, and each job keeps its own where some have one', async () => {
    const store = stores[0] ?? (await open());
    const plain = [newJob('nulls.plain'), newJob('nulls.plain')];
    const params = newJobParams(plain, true);
    for (const field of ['idempotency_key', 'trace_context', 'job_group'] as const) {
      expect(params[PER_JOB_FIELDS.indexOf(field)]).toBeNull();
    }
    const traceContext = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    const mixed = [
      newJob('nulls.mixed', { idempotencyKey: 'k1' }),
      newJob('nulls.mixed'),
      newJob('nulls.mixed', { traceContext, group: 'g1' }),
      newJob('nulls.mixed'),
    ];
    await store.insertJobs([...plain, ...mixed]);
    const { rows } = await admin.query(
      `SELECT name, payload, idempotency_key, trace_context, job_group FROM "${schema}".jobs WHERE name LIKE 'nulls.%' ORDER BY id`,
    );
    const row = (key: string | null, trace: object | null, group: string | null) => ({
      payload: { n: 1 },
      idempotency_key: key,
      trace_context: trace,
      job_group: group,
    });
    expect(rows).toEqual([
      { name: 'nulls.plain', ...row(null, null, null) },
      { name: 'nulls.plain', ...row(null, null, null) },
      { name: 'nulls.mixed', ...row('k1', null, null) },
      { name: 'nulls.mixed', ...row(null, null, null) },
      { name: 'nulls.mixed', ...row(null, traceContext, 'g1') },
      { name: 'nulls.mixed', ...row(null, null, null) },
    ]);
  });

  it('claims by walking the claim index, not by reading every ready job, when statistics lag behind', async () => {
    // A new table, then 60,000 ready jobs and a vacuum, which counts the table's rows but gathers no
    // statistics: the planner estimates about one ready job, and a plan that reads and sorts them all looks
    // as cheap as the index walk.
    const fresh = `${schema}_fresh`;
    stores.push(await createPostgresStore({ connectionString: url, schema: fresh, poolSize: 1 }));
    try {
      const name = 'explain.stale';
      await insertJobRows(name, 'waiting', fresh, 60_000);
      await admin.query(`VACUUM "${fresh}".jobs`);
      const { rows } = await admin.query(`SELECT relpages FROM pg_class WHERE oid = '"${fresh}".jobs'::regclass`);
      // Reading every ready job reads every page of the table, and more to sort them.
      expect(await claimBuffers(name, 10, fresh)).toBeLessThan(rows[0].relpages / 4);
    } finally {
      await admin.query(`DROP SCHEMA "${fresh}" CASCADE`);
    }
  });

  it('claims a grouped type by walking the group claim index, not every ready job per group, when statistics lag behind', async () => {
    // Vacuumed and analyzed while the type had no job with a group, as when groups come to a queue that ran
    // without them: the planner estimates about one job with a group, and walking the plain claim index,
    // filtered by group, looks as cheap as walking the group claim index, though it reads every ready job of the
    // groups enqueued before each group.
    const own = `${schema}_groups`;
    const store = await createPostgresStore({ connectionString: url, schema: own, poolSize: 1 });
    stores.push(store);
    try {
      const name = 'explain.groups';
      const now = new Date('2026-01-02T00:00:00.000Z');
      await admin.query(`ALTER TABLE "${own}".jobs SET (autovacuum_enabled = false)`);
      await insertJobRows(name, 'completed', own, 100);
      await admin.query(`VACUUM ANALYZE "${own}".jobs`);
      await store.updateQueueSettings(name, { groupConcurrency: 1, grouped: true }, now);
      // 100 groups, each group's 100 jobs enqueued together.
      const jobs = Array.from({ length: 10_000 }, (_, n) => newJob(name, { group: `g${Math.floor(n / 100)}` }));
      await store.insertJobs(jobs);
      const explain = `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${buildFlowStatements(`"${own}"`).claimLimited}`;
      const connection = await admin.connect();
      try {
        await connection.query('BEGIN');
        const params = [name, now, 1, 1, 10, 'token', 'worker', null];
        // The second of two claims counts: the first also plans the function's statements, once per connection.
        await connection.query(explain, params);
        const { rows } = await connection.query(explain, params);
        const plan = rows[0]['QUERY PLAN'][0].Plan as Record<string, number>;
        expect(plan['Actual Rows']).toBe(11);
        // Walking the claim index for each group reads over 50,000 pages; walking each group's range of the
        // group claim index from its head, under 1,000.
        expect((plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0)).toBeLessThan(3_000);
      } finally {
        await connection.query('ROLLBACK');
        connection.release();
      }
    } finally {
      await admin.query(`DROP SCHEMA "${own}" CASCADE`);
    }
  });

  it('commits the acks a limited claim carries after the WAL flush, though the claim alone would not wait for it', async () => {
    const store = stores[0] ?? (await open());
    const name = 'durable.acks';
    const now = new Date();
    await store.updateQueueSettings(name, { concurrency: 5 }, now);
    await store.insertJobs([newJob(name), newJob(name)]);
    const request = { name, now, minVersion: 1, maxVersion: 1, limit: 1, workerId: 'worker', leaseMs: null };
    const [held] = await store.claimJobs({ ...request, leaseToken: 'held' });
    // Each statement runs in a transaction of its own, as the store runs it; what it leaves synchronous_commit at
    // is what that transaction's commit would wait for.
    const settingAfter = async (sql: string, params: unknown[]) => {
      const connection = await admin.connect();
      try {
        await connection.query('BEGIN');
        await connection.query(sql, params);
        return (await connection.query('SHOW synchronous_commit')).rows[0].synchronous_commit as string;
      } finally {
        await connection.query('ROLLBACK');
        connection.release();
      }
    };
    const claimParams = [name, now, 1, 1, 1, 'token', 'worker', null];
    expect(await settingAfter(buildFlowStatements(`"${schema}"`).claimLimited, claimParams)).toBe('off');
    const acks = [[held?.id], ['held'], ['null']];
    expect(await settingAfter(completeAndClaimStatement(`"${schema}"`), [...claimParams, ...acks])).toBe('on');
  });

  it('completes a batch by looking each job up through the primary key, whatever the statistics say', async (ctx) => {
    const store = stores[0] ?? (await open());
    const name = 'explain.complete';
    await store.insertJobs(Array.from({ length: 1000 }, () => newJob(name)));
    // Analyzed while no job is active: the statistics say hardly any row has an unexpired lease.
    await admin.query(`ANALYZE "${schema}".jobs`);
    const now = new Date('2026-01-02T00:00:00.000Z');
    const claim = { name, minVersion: 1, maxVersion: 1, limit: 1000, leaseToken: 'token', workerId: 'w', now };
    const ids = (await store.claimJobs({ ...claim, leaseMs: null })).map((job) => job.id);
    const params = [ids, ids.map(() => 'token'), ids.map(() => 'null'), now];
    const explained = await explainedPlans(buildStatements(`"${schema}"`).completeJobs, params);
    if (!explained) return ctx.skip('auto_explain cannot be loaded on this server');
    expect(explained.rows).toHaveLength(1000);
    const update = explained.plans.find((plan) => plan.includes('Update on jobs')) ?? '';
    // The batch is the outer side; each of its rows finds its job by key, and no row is compared with the batch.
    expect(update).toMatch(/Function Scan on u[\s\S]*Index Scan using jobs_pkey on jobs j[\s\S]*Index Cond: \(id = /);
    expect(update).toMatch(/Index Cond: \(id = \(?u\.id\)?/);
    expect(update).not.toMatch(/Rows Removed by Join Filter|Seq Scan|Hash Join/);
  });

  /**
   * Runs `test` on a store of its own schema that vacuums after 20 changed rows, with `claim(limit)` (jobs of
   * one name, inserted as `jobs`) and `vacuums()`, how often PostgreSQL has vacuumed its table on request.
   */
  const withChurningStore = async (
    suffix: string,
    jobs: number,
    test: (store: Store, claim: (limit: number) => Promise<unknown>, vacuums: () => Promise<string>) => Promise<void>,
  ) => {
    const own = `${schema}_${suffix}`;
    const store = await createPostgresStore({ connectionString: url, schema: own, poolSize: 1, vacuumEveryRows: 20 });
    try {
      await store.insertJobs(Array.from({ length: jobs }, () => newJob('vacuum.churn')));
      const request = { name: 'vacuum.churn', minVersion: 1, maxVersion: 1, leaseToken: 't', workerId: 'w' };
      const claim = (limit: number) => store.claimJobs({ ...request, limit, leaseMs: null, now: new Date() });
      const vacuums = async (): Promise<string> =>
        (await admin.query(`SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = '"${own}".jobs'::regclass`))
          .rows[0].vacuum_count;
      await test(store, claim, vacuums);
    } finally {
      await store.close();
      await admin.query(`DROP SCHEMA "${own}" CASCADE`);
    }
  };

  /** The vacuum count once it is no longer 0 (the store vacuums in the background). */
  const firstVacuum = (vacuums: () => Promise<string>) =>
    waitFor(async () => {
      const count = await vacuums();
      return count === '0' ? undefined : count;
    });

  it('vacuums its jobs table once the rows it changed pass vacuumEveryRows', async () => {
    await withChurningStore('vacuum', 25, async (_store, claim, vacuums) => {
      expect(await vacuums()).toBe('0');
      await claim(25);
      expect(await firstVacuum(vacuums)).toBe('1');
    });
  });

  it('waits longer between vacuums of a larger table, however small vacuumEveryRows is', async () => {
    await withChurningStore('vacuum_share', 1000, async (store, claim, vacuums) => {
      await claim(25);
      expect(await firstVacuum(vacuums)).toBe('1');
      // The vacuum counted 1,000 rows, so the next one waits for sqrt(2,000 × 1,000) ≈ 1,414 changed rows.
      // Two claims: on the store's one connection, the second follows the end of that vacuum's housekeeping.
      await claim(200);
      await claim(200);
      await store.close();
      expect(await vacuums()).toBe('1');
    });
  });

  it('sizes even its first wait by the rows the catalog counted before it opened the table', async () => {
    await withChurningStore('vacuum_known', 1000, async (store, claim, vacuums) => {
      await admin.query(`VACUUM ANALYZE "${schema}_vacuum_known".jobs`);
      expect(await vacuums()).toBe('1');
      // 1,000 rows counted: the store waits for about 1,414 changed rows, not for vacuumEveryRows (20).
      await claim(25);
      await claim(200);
      await store.close();
      expect(await vacuums()).toBe('1');
    });
  });

  it('refuses a lease expiry on a job that is not active, and a token unless active or completed, which fencing relies on', async () => {
    const store = stores[0] ?? (await open());
    const job = newJob('fence.rule');
    await store.insertJobs([job]);
    for (const change of [`lease_token = 'token'`, `lease_expires_at = now() + interval '1 hour'`]) {
      await expect(admin.query(`UPDATE "${schema}".jobs SET ${change} WHERE id = $1`, [job.id])).rejects.toThrow(
        /jobs_lease_only_when_active/,
      );
    }
    const { rows } = await admin.query(`SELECT lease_token, lease_expires_at FROM "${schema}".jobs WHERE id = $1`, [
      job.id,
    ]);
    expect(rows).toEqual([{ lease_token: null, lease_expires_at: null }]);
  });

  it('lists dead jobs and sweeps expired leases through the partial open index, whatever the completed history', async () => {
    const store = stores[0] ?? (await open());
    const name = 'explain.list';
    await insertCompletedHistory(name);
    await store.insertJobs(Array.from({ length: 50 }, () => newJob(name)));
    await admin.query(`ANALYZE "${schema}".jobs`);
    const deadOfName = buildListJobs(`"${schema}"`, { name, states: ['dead'], limit: 50 });
    expect(await planOf(deadOfName.text, deadOfName.params)).toMatch(/Index (Only )?Scan using jobs_open_idx/);
    const sweep = sweptLeasesSql(`"${schema}".jobs`, '$1::timestamptz', '$2', '$3');
    expect(await planOf(sweep, [new Date(), '{}', '{}'])).toMatch(/jobs_open_idx/);
  });

  it('delivers a published job name to a subscriber on another store, and again after its connection drops', async () => {
    const [publisher, subscriber] = await Promise.all([open(), open()]);
    expect(publisher.notifier).toBeDefined();
    const received: string[] = [];
    const unsubscribe = await subscriber.notifier!.subscribe((name) => received.push(name));
    await publisher.notifier!.publish('imageConvert');
    await waitFor(() => (received.includes('imageConvert') ? true : undefined));

    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1`, [
      `LISTEN "${channelOf(schema)}"`,
    ]);
    await waitFor(() => (received.includes('*') ? true : undefined));
    await publisher.notifier!.publish('sendEmail');
    await waitFor(() => (received.includes('sendEmail') ? true : undefined));

    await unsubscribe();
    await publisher.notifier!.publish('afterUnsubscribe');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(received).not.toContain('afterUnsubscribe');
  });

  it('concurrent batches over the same keys in different orders neither deadlock nor duplicate', async () => {
    const writers = await Promise.all([open(), open(), open()]);
    const name = 'keys.shuffled';
    const keys = Array.from({ length: 100 }, (_, n) => `k${n}`);
    const batches = Array.from({ length: 12 }, () => {
      const shuffled = [...keys];
      for (let i = shuffled.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1));
        [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
      }
      return shuffled.map((idempotencyKey) => newJob(name, { idempotencyKey }));
    });
    const results = await Promise.all(batches.map((batch, b) => writers[b % writers.length]!.insertJobs(batch)));
    const idByKey = new Map<string, Set<string>>();
    for (const outcome of results.flat()) {
      const ids = idByKey.get(outcome.job!.idempotencyKey!) ?? new Set();
      ids.add(outcome.job!.id);
      idByKey.set(outcome.job!.idempotencyKey!, ids);
    }
    expect([...idByKey.values()].every((ids) => ids.size === 1)).toBe(true);
    expect(results.flat().filter((outcome) => outcome.created)).toHaveLength(keys.length);
    const stored = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE name = $1`, [name]);
    expect(stored.rows[0].n).toBe(keys.length);
  });

  it('starts with 4 warm connections, each having rolled back its warm-up', async () => {
    const application = `workq_warm_${Math.random().toString(36).slice(2, 10)}`;
    const store = await createPostgresStore({ connectionString: `${url}?application_name=${application}`, schema });
    stores.push(store);
    const { rows } = await admin.query<{ query: string; state: string }>(
      'SELECT query, state FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid',
      [application],
    );
    expect(rows).toEqual(Array(4).fill({ query: 'ROLLBACK', state: 'idle' }));
  });

  it('warms each connection with every runtime statement, the handoff insert too, and keeps no row', async () => {
    const store = (await open()) as PostgresStore;
    const before = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".jobs`);
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      await createPoolSqlClient(pool, 'test', false).warm(2, () => store.warmUpStatements());
      const texts = store.warmUpStatements().map((statement) => statement.text);
      const sql = buildStatements(`"${schema}"`);
      const claim = claimJobsSql(`"${schema}"`, true);
      expect(texts).toEqual(expect.arrayContaining([claim, sql.completeJobs, sql.insertAndClaimJob]));
      // Both connections at once, so each is a different one of the two warmed.
      const connections = await Promise.all([pool.connect(), pool.connect()]);
      for (const connection of connections) {
        const prepared = await connection.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements');
        expect(prepared.rows.map((row) => row.statement)).toEqual(expect.arrayContaining(texts));
        connection.release();
      }
      const after = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".jobs`);
      expect(after.rows[0].n).toBe(before.rows[0].n);
    } finally {
      await pool.end();
    }
  });

  it('close is idempotent and leaves a pool it was given open', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const store = await createPostgresStore({ pool, schema });
    await Promise.all([store.close(), store.close()]);
    await store.close();
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });

  it('a driver error is UNAVAILABLE with a generic message, not the database text', async () => {
    const store = await open();
    await admin.query(`CREATE SCHEMA IF NOT EXISTS "${schema}_gone"`);
    const doomed = await createPostgresStore({ connectionString: url, schema: `${schema}_gone` });
    await admin.query(`DROP SCHEMA "${schema}_gone" CASCADE`);
    const error = await doomed.getJob('x').catch((e: unknown) => e);
    await doomed.close();
    expect(error).toBeInstanceOf(WorkqError);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: false });
    expect((error as Error).message).toBe('A PostgreSQL store operation failed (SQLSTATE 42P01).');
    expect(await store.getJob('x')).toBeNull();
  });
});

describe('postgres store: errors and options', () => {
  it('fails fast with UNAVAILABLE when the server cannot be reached, without the password', async () => {
    await expectUnreachable(
      () => createPostgresStore({ connectionString: 'postgres://postgres:s3cret@127.0.0.1:1/test' }),
      { names: '127.0.0.1:1', hides: 's3cret', withinMs: 15_000 },
    );
  });

  it('rejects a schema name that is not a plain identifier', async () => {
    for (const schema of ['Workq', 'a-b', 'x"; DROP TABLE y; --', '1abc', 'a'.repeat(64)]) {
      await expect(createPgliteStore({ schema })).rejects.toMatchObject({ code: 'VALIDATION' });
    }
  });
});

describe('pglite store', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await PGlite.create();
  });
  afterAll(async () => {
    await db.close();
  });

  it('migrates idempotently, declares no notifier, and closes idempotently', async () => {
    const [a, b] = await Promise.all([openPgliteStore(db, { ownsDb: false }), openPgliteStore(db, { ownsDb: false })]);
    expect((await db.query('SELECT version FROM workq.migrations')).rows).toEqual([{ version: SCHEMA_VERSION }]);
    expect(a.notifier).toBeUndefined();
    expect([a.leadership, a.handoff, a.completeAndClaim]).not.toContain(undefined);
    const [outcome] = await a.insertJobs([newJob('pglite.shared')]);
    expect(await b.getJob(outcome!.job!.id)).toMatchObject({ name: 'pglite.shared', state: 'waiting' });
    await Promise.all([a.close(), a.close()]);
    expect(await b.getJob(outcome!.job!.id)).not.toBeNull();
    await b.close();
  });

  it('accepts the housekeeping vacuum, its only maintenance, and reads the row count it leaves', async () => {
    const store = await openPgliteStore(db, { ownsDb: false });
    await store.insertJobs([newJob('pglite.vacuum')]);
    const statements = buildStatements('"workq"');
    await expect(db.exec(statements.vacuumJobs)).resolves.toBeDefined();
    const { rows } = await db.query<{ rows: number }>(statements.estimateJobRows);
    expect(rows[0]?.rows).toBeGreaterThanOrEqual(1);
    await store.close();
  });

  it('claims a grouped type by walking the group claim index, though PGlite gathers no statistics', async () => {
    const store = await openPgliteStore(db, { schema: 'workq_groups', ownsDb: false });
    try {
      const name = 'pglite.groups';
      const now = new Date('2026-01-02T00:00:00.000Z');
      // Vacuumed, as the store's housekeeping does, while the type had no job with a group.
      await store.insertJobs(Array.from({ length: 100 }, () => newJob(name)));
      await db.exec('VACUUM workq_groups.jobs');
      await store.updateQueueSettings(name, { groupConcurrency: 1, grouped: true }, now);
      // 100 groups, each group's 100 jobs enqueued together.
      const jobs = Array.from({ length: 10_000 }, (_, n) => newJob(name, { group: `g${Math.floor(n / 100)}` }));
      await store.insertJobs(jobs);
      const explain = `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${buildFlowStatements('"workq_groups"').claimLimited}`;
      const params = [name, now, 1, 1, 10, 'token', 'worker', null];
      await db.exec('BEGIN');
      try {
        // The second of two claims counts: the first also plans the function's statements.
        await db.query(explain, params);
        const { rows } = await db.query<{ 'QUERY PLAN': { Plan: Record<string, number> }[] }>(explain, params);
        const plan = rows[0]?.['QUERY PLAN'][0]?.Plan ?? {};
        expect(plan['Actual Rows']).toBe(11);
        // Walking the claim index for each group reads over 50,000 pages; walking each group's range of the group
        // claim index from its head, under 1,000.
        expect((plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0)).toBeLessThan(3_000);
      } finally {
        await db.exec('ROLLBACK');
      }
    } finally {
      await store.close();
    }
  });

  it('a flow sent again under its key or its parent id fails no statement, which PostgreSQL would log as an ERROR', async () => {
    const own = await PGlite.create();
    // Every statement the store sends, alone or in a transaction, and every one that failed.
    const failed: string[] = [];
    const [query, transaction] = [own.query.bind(own), own.transaction.bind(own)];
    const noted =
      <A extends unknown[], R>(run: (...args: A) => Promise<R>) =>
      (...args: A) =>
        run(...args).catch((error: unknown) => {
          failed.push(error instanceof Error ? error.message : String(error));
          throw error;
        });
    own.query = noted(query) as typeof own.query;
    own.transaction = noted(transaction) as typeof own.transaction;
    const store = await openPgliteStore(own, { ownsDb: true });
    try {
      const engine = createEngine({ store, leaseSweepIntervalMs: 0 });
      const flow = (options: { idempotencyKey?: string; id?: string }) => ({
        name: 'pglite.flow-again',
        version: 1,
        payload: { n: 1 },
        options,
        children: [{ name: 'pglite.flow-again-child', version: 1, payload: { c: 1 } }],
      });
      const keyed = await engine.flows.enqueue(flow({ idempotencyKey: 'report-1' }));
      expect(await engine.flows.enqueue(flow({ idempotencyKey: 'report-1' }))).toMatchObject({
        id: keyed.id,
        created: false,
      });
      const id = '0190a8c4-3f2e-7c1a-9b6d-2f4e5a6b7c8d';
      expect(await engine.flows.enqueue(flow({ id }))).toMatchObject({ id, created: true });
      expect(await engine.flows.enqueue(flow({ id }))).toMatchObject({ id, created: false });
      expect(failed).toEqual([]);
      // What the check sees: an insert that does fail (an id taken below the root).
      const childId = '0190a8c4-3f2e-7c1a-9b6d-2f4e5a6b7c8e';
      await expect(
        store.insertFlow([
          newJob('pglite.flow-again', { pendingChildren: 1 }),
          newJob('pglite.flow-again-child', { id: childId }),
          newJob('pglite.flow-again-child', { id: childId }),
        ]),
      ).rejects.toBeInstanceOf(WorkqError);
      expect(failed).toEqual([expect.stringContaining('duplicate key')]);
    } finally {
      await store.close();
    }
  });

  it('createPgliteStore owns its instance and closes it', async () => {
    const store = await createPgliteStore({ schema: 'workq_own' });
    expect(store.kind).toBe('pglite');
    await store.close();
    await store.close();
    await expect(store.getJob('x')).rejects.toBeInstanceOf(WorkqError);
  });
});
