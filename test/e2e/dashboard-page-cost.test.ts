import { createTRPCClient, httpLink } from '@trpc/client';
import { wireTransformer } from '@workq/core';
import { type ListFilter, openStore, type Store } from '@workq/core/engine';
import { type AppRouter, type QueueServer, startServer } from '@workq/queue-server';
import { jobs } from '@workq/schemas';
import { createClient, PermanentError } from '@workq/sdk';
import {
  freshMysqlDatabase,
  freshPostgresSchema,
  MYSQL_URL,
  mysqlUnreachableReason,
  POSTGRES_URL,
  planQuery,
  postgresUnreachableReason,
  startMongoWireDouble,
  uniqueName,
  until,
} from '@workq/test-support';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobFilter, loadJobPage, PAGE_SIZE } from '../../apps/dashboard/src/job-list.ts';
import { listJobs as listMysqlJobs } from '../../packages/core/src/stores/mysql/list-jobs.ts';
import { tableNames } from '../../packages/core/src/stores/mysql/tables.ts';
import { buildListJobs } from '../../packages/core/src/stores/postgres/list-jobs.ts';
import { collectingLogger } from '../support/quiet-logger.ts';

/**
 * What opening a page of the dashboard's Jobs list costs over a store of 100,000 jobs: one call of one
 * page's small rows, whatever the filter and however deep the page, on every kind of store. The jobs are
 * written in bulk by the database itself (one statement), as copies of one dead job with ids, types,
 * versions, states, groups and keys varied by their number.
 */

const JOBS = 100_000;
const TOKEN = 'page-cost-admin-token';
/** The most bytes one page's answer may take: one row is a few hundred bytes, whatever the store holds. */
const MAX_PAGE_BYTES = PAGE_SIZE * 700;
const NO_FILTER: JobFilter = { name: '', state: '', version: '', group: '', q: '', from: '', to: '' };

/** The states a store keeps jobs in: the engine's five, and `delayed` for waiting jobs due later. */
const KEPT_STATES = 6;

/** The job types of the copies, one in three each, whatever their state. */
const TYPES = ['imageConvert', 'sendEmail', 'resizeVideo'] as const;

/**
 * Job number `n` (1..JOBS), as each store's bulk statement writes it and the assertions expect it: type, state,
 * version and group each follow their own digit of `n`, so every type has jobs in every state and version.
 */
const shapeOf = (n: number) => ({
  name: TYPES[n % 3] as string,
  state: n % 100 === 0 ? 'dead' : n % 100 === 1 ? 'waiting' : n % 100 === 2 ? 'cancelled' : 'completed',
  version: 1 + (Math.floor(n / 100) % 2),
  group: n % 7 === 0 ? 'acme' : null,
  idempotencyKey: n % 50 === 0 ? `key-${n}` : null,
});

/** A UUIDv7 of job `n`, created `n` ms after `baseMs`: what newJobId would have made then. */
const idOf = (baseMs: number, n: number) => {
  const time = (baseMs + n).toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7000-8000-${n.toString(16).padStart(12, '0')}`;
};

/** A kind of store, and how it is filled with copies of the template job. */
interface StoreCase {
  label: string;
  unreachable: () => Promise<string | undefined>;
  open: () => Promise<{
    store: string | Store;
    fill: (templateId: string, baseMs: number) => Promise<void>;
    /** The index entries and rows the store reads for the page of `filter`, as the database counts them. */
    examined: (filter: ListFilter) => Promise<number>;
    drop: () => Promise<void>;
  }>;
}

/** The SQL expression of each copied column that is not the template's own, given the job's number. */
function sqlOverrides(n: string, hex: (ms: string) => string, at: (ms: string) => string, baseMs: number) {
  const ms = `(${baseMs} + ${n})`;
  const time = hex(ms);
  const padded = hex(n);
  return {
    id: `CONCAT(SUBSTR(${time}, 1, 8), '-', SUBSTR(${time}, 9, 4), '-7000-8000-', ${padded})`,
    name: `CASE MOD(${n}, 3) ${TYPES.map((type, i) => `WHEN ${i} THEN '${type}'`).join(' ')} END`,
    state: `CASE MOD(${n}, 100) WHEN 0 THEN 'dead' WHEN 1 THEN 'waiting' WHEN 2 THEN 'cancelled' ELSE 'completed' END`,
    version: `1 + MOD((${n} - MOD(${n}, 100)) / 100, 2)`,
    job_group: `CASE WHEN MOD(${n}, 7) = 0 THEN 'acme' END`,
    idempotency_key: `CASE WHEN MOD(${n}, 50) = 0 THEN CONCAT('key-', ${n}) END`,
    created_at: at(ms),
    updated_at: at(ms),
    run_at: at(ms),
    finished_at: `CASE WHEN MOD(${n}, 100) = 1 THEN NULL ELSE ${at(ms)} END`,
    error: `CASE WHEN MOD(${n}, 100) = 0 THEN t.error END`,
    idempotency_expires_at: 'NULL',
    debounce_key: 'NULL',
    lease_token: 'NULL',
    lease_expires_at: 'NULL',
    worker_id: 'NULL',
    replay_of: 'NULL',
    moved_to: 'NULL',
    moved_from: 'NULL',
    delayed_until: 'NULL',
  } as Record<string, string>;
}

/** `INSERT … SELECT` of every column: an override where there is one, else the template's own value. */
function copyStatement(table: string, columns: string[], overrides: Record<string, string>, rows: string): string {
  const values = columns.map((column) => overrides[column] ?? `t.${column}`);
  return `INSERT INTO ${table} (${columns.join(', ')}) SELECT ${values.join(', ')} FROM ${rows} CROSS JOIN ${table} AS t WHERE t.id = ?`;
}

const postgres: StoreCase = {
  label: 'postgres',
  unreachable: postgresUnreachableReason,
  open: async () => {
    const fresh = freshPostgresSchema('workq_e2e');
    const fill = async (templateId: string, baseMs: number) => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        const { rows } = await client.query<{ column_name: string }>(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'jobs' AND is_generated = 'NEVER'`,
          [fresh.schema],
        );
        const hex = (value: string) => `lpad(to_hex(${value}), 12, '0')`;
        const at = (ms: string) => `to_timestamp(${ms} / 1000.0)`;
        const overrides = sqlOverrides('g.n', hex, at, baseMs);
        const rowsOf = `generate_series(1, ${JOBS}) AS g(n)`;
        const sql = copyStatement(
          `"${fresh.schema}".jobs`,
          rows.map((row) => row.column_name),
          overrides,
          rowsOf,
        );
        await client.query(sql.replace('?', '$1'), [templateId]);
        await client.query(`ANALYZE "${fresh.schema}".jobs`);
      } finally {
        await client.end();
      }
    };
    const examined = async (filter: ListFilter) => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        const { text, params } = buildListJobs(`"${fresh.schema}"`, filter);
        const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params);
        return rowsRead(rows[0]['QUERY PLAN'][0].Plan);
      } finally {
        await client.end();
      }
    };
    return { store: fresh.url, fill, examined, drop: fresh.drop };
  },
};

/**
 * The rows a PostgreSQL plan's scans read, returned and filtered out, in every loop: a plan that sorts every
 * match reads every match below its sort.
 */
function rowsRead(node: Record<string, unknown>): number {
  const own = String(node['Node Type']).includes('Scan')
    ? (Number(node['Actual Rows']) + Number(node['Rows Removed by Filter'] ?? 0)) * Number(node['Actual Loops'])
    : 0;
  const children = (node.Plans as Record<string, unknown>[] | undefined) ?? [];
  return children.reduce((sum, child) => sum + rowsRead(child), own);
}

const mariadb: StoreCase = {
  label: 'mysql',
  unreachable: mysqlUnreachableReason,
  open: async () => {
    const fresh = await freshMysqlDatabase('workq_e2e');
    const fill = async (templateId: string, baseMs: number) => {
      const connection = await mysql.createConnection(`${MYSQL_URL.replace(/\/[^/]*$/, '')}/${fresh.database}`);
      try {
        await connection.query(`SET time_zone = '+00:00'`);
        const [rows] = await connection.query<mysql.RowDataPacket[]>(
          `SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS
           WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '%jobs' AND EXTRA NOT LIKE '%GENERATED%'`,
          [fresh.database],
        );
        const table = `\`${String(rows[0]?.TABLE_NAME)}\``;
        const hex = (value: string) => `LOWER(LPAD(HEX(${value}), 12, '0'))`;
        const at = (ms: string) => `FROM_UNIXTIME(${ms} / 1000)`;
        const overrides = sqlOverrides('s.seq', hex, at, baseMs);
        const columns = rows.map((row) => String(row.COLUMN_NAME));
        await connection.query(copyStatement(table, columns, overrides, `seq_1_to_${JOBS} AS s`), [templateId]);
        await connection.query(`ANALYZE TABLE ${table}`);
      } finally {
        await connection.end();
      }
    };
    // The session's handler reads (index entries, rows, and the merge's own temporary rows) over the store's
    // statements for the page, less what reading the counters costs.
    const examined = async (filter: ListFilter) => {
      const connection = await mysql.createConnection(`${MYSQL_URL.replace(/\/[^/]*$/, '')}/${fresh.database}`);
      const reads = async () => {
        const [rows] = await connection.query<mysql.RowDataPacket[]>(`SHOW SESSION STATUS LIKE 'Handler_read%'`);
        return rows.reduce((sum, row) => sum + Number(row.Value), 0);
      };
      try {
        const overhead = -(await reads()) + (await reads());
        const before = await reads();
        await listMysqlJobs(connection as unknown as mysql.Pool, tableNames('workq_'), filter);
        return (await reads()) - before - overhead;
      } finally {
        await connection.end();
      }
    };
    return { store: fresh.url, fill, examined, drop: fresh.drop };
  },
};

/** The jobs collection the MongoDB store keeps in its database. */
const MONGO_JOBS = 'workq_jobs';

const mongodbWire: StoreCase = {
  label: 'mongodb (wire double)',
  unreachable: async () => undefined,
  open: async () => {
    const database = uniqueName('workq_e2e');
    const double = await startMongoWireDouble({ database });
    const store = await openStore(double.url);
    const jobsData = () => {
      const data = double.state.collection(database, MONGO_JOBS);
      if (!data) throw new Error(`the store made no ${MONGO_JOBS} collection`);
      return data;
    };
    // Written into the primary's own data, as the SQL stores' one statement writes inside the database.
    const fill = async (templateId: string, baseMs: number) => {
      const data = jobsData();
      const [template] = data.match({ _id: templateId });
      for (let n = 1; n <= JOBS; n++) {
        const shape = shapeOf(n);
        const at = new Date(baseMs + n);
        data.insert({
          ...template,
          _id: idOf(baseMs, n),
          name: shape.name,
          state: shape.state,
          version: shape.version,
          ...(shape.group === null ? {} : { group: shape.group }),
          idempotencyKey: shape.idempotencyKey,
          createdAt: at,
          updatedAt: at,
          runAt: at,
          finishedAt: shape.state === 'waiting' ? null : at,
          error: shape.state === 'dead' ? template?.error : null,
        });
      }
    };
    // The plan of the page's read of the jobs (sorted by id, unlike the store's own background reads), as the
    // server's planner would count it. A key without a type reads the types first (`distinct`), which the
    // double does not plan: a server reads one index entry per type for it.
    const examined = async (filter: ListFilter) => {
      const from = double.commands.length;
      await store.listJobs(filter);
      const read = double.commands
        .slice(from)
        .find(({ name, body }) => name === 'find' && body.find === MONGO_JOBS && '_id' in (body.sort ?? {}));
      if (!read) return Number.POSITIVE_INFINITY;
      const data = jobsData();
      const { filter: query, sort, limit, hint } = read.body;
      return planQuery(data.plannedIndexes(), data.docs.size, { filter: query, sort, limit, hint }).examined;
    };
    const drop = async () => {
      await store.close();
      await double.close();
    };
    return { store: double.url, fill, examined, drop };
  },
};

/** A tRPC client like the dashboard's, which counts the calls it makes and the bytes of their answers. */
function meteredClient(url: string) {
  const meter = { calls: 0, bytes: 0 };
  const metered: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const body = await response.arrayBuffer();
    meter.calls += 1;
    meter.bytes += body.byteLength;
    return new Response(body, { status: response.status, headers: response.headers });
  };
  const api = createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${url}/trpc`,
        transformer: wireTransformer,
        headers: { authorization: `Bearer ${TOKEN}` },
        fetch: metered,
      }),
    ],
  });
  /** Runs `open` and says what it cost, resetting the meter first. */
  const cost = async <T>(open: () => Promise<T>): Promise<{ value: T; calls: number; bytes: number }> => {
    meter.calls = 0;
    meter.bytes = 0;
    const value = await open();
    return { value, calls: meter.calls, bytes: meter.bytes };
  };
  return { api, cost };
}

const reachability = await Promise.all(
  [postgres, mariadb, mongodbWire].map(async (kind) => ({ kind, skip: await kind.unreachable() })),
);

for (const { kind, skip } of reachability) {
  if (skip) console.log(`dashboard page cost on ${kind.label}: skipped — ${skip}`);
}

describe.each(reachability.filter(({ skip }) => !skip).map(({ kind }) => kind))(
  'the Jobs list over 100,000 jobs on $label',
  (kind) => {
    let queue: QueueServer;
    let opened: Awaited<ReturnType<StoreCase['open']>>;
    let client: ReturnType<typeof meteredClient>;
    let baseMs: number;

    beforeAll(async () => {
      opened = await kind.open();
      queue = await startServer({
        store: opened.store,
        port: 0,
        tokens: [{ token: TOKEN, scopes: ['admin', 'produce:*', 'consume:*', 'register:*'] }],
        logger: collectingLogger(),
      });
      // One dead job, with its worker's error, copied 100,000 times by the database.
      const sdk = createClient({ url: queue.url, jobs, token: TOKEN });
      const worker = sdk.consume(
        'imageConvert',
        () => {
          throw new PermanentError('printer on fire');
        },
        { onError: () => {} },
      );
      const template = await sdk.enqueue.imageConvert({ source: 'a.png', output: 'a.webp' }, { maxAttempts: 1 });
      await until(async () => (await template.status()).state === 'dead', 15_000);
      await worker.close();
      // The copies are the newest jobs: created from a second ahead, a millisecond apart.
      baseMs = Date.now() + 1_000;
      await opened.fill(template.id, baseMs);
      client = meteredClient(queue.url);
    });

    afterAll(async () => {
      await queue?.close();
      await opened?.drop();
    });

    it('opens the first page, a deep page and each filter in one small call', async () => {
      const { api, cost } = client;
      const first = await cost(() => loadJobPage(api, NO_FILTER));
      expect(first.calls).toBe(1);
      expect(first.bytes).toBeLessThan(MAX_PAGE_BYTES);
      expect(first.value.jobs.map((job) => job.id)).toEqual(
        Array.from({ length: PAGE_SIZE }, (_, index) => idOf(baseMs, JOBS - index)),
      );
      // Dead rows carry their error's message, cut short; no payload or result travels.
      expect(first.value.jobs[0]).toMatchObject({ state: 'dead', error: { message: 'printer on fire' } });
      expect(first.value.jobs[0]).not.toHaveProperty('payload');

      // Two pages on by their cursors: each one call, older than the page before, none repeated.
      const second = await cost(() => loadJobPage(api, NO_FILTER, first.value.nextCursor ?? undefined));
      const third = await cost(() => loadJobPage(api, NO_FILTER, second.value.nextCursor ?? undefined));
      expect([second.calls, third.calls]).toEqual([1, 1]);
      expect(third.value.jobs[0]?.id).toBe(idOf(baseMs, JOBS - 2 * PAGE_SIZE));
      // A page near the oldest end costs what the first did.
      const deep = await cost(() => loadJobPage(api, NO_FILTER, idOf(baseMs, 60)));
      expect(deep.calls).toBe(1);
      expect(deep.value.jobs.map((job) => job.id)).toEqual(
        Array.from({ length: PAGE_SIZE }, (_, index) => idOf(baseMs, 59 - index)),
      );
      expect(deep.value.nextCursor).toBe(idOf(baseMs, 10));

      const is = (want: Partial<ReturnType<typeof shapeOf>>) => (n: number) =>
        Object.entries(want).every(([field, value]) => shapeOf(n)[field as keyof typeof want] === value);
      const filters: [Partial<JobFilter>, (n: number) => boolean][] = [
        [{ name: 'imageConvert', state: 'dead' }, is({ name: 'imageConvert', state: 'dead' })],
        [{ name: 'sendEmail', state: 'completed' }, is({ name: 'sendEmail', state: 'completed' })],
        [{ name: 'sendEmail' }, is({ name: 'sendEmail' })],
        [{ state: 'cancelled' }, is({ state: 'cancelled' })],
        [{ state: 'completed' }, is({ state: 'completed' })],
        [{ name: 'imageConvert', version: '2' }, is({ name: 'imageConvert', version: 2 })],
        [{ state: 'dead', version: '2' }, is({ state: 'dead', version: 2 })],
        [{ group: 'acme' }, is({ group: 'acme' })],
        [{ group: 'acme', state: 'dead' }, is({ group: 'acme', state: 'dead' })],
      ];
      for (const [narrowed, matches] of filters) {
        const filter = { ...NO_FILTER, ...narrowed };
        const page = await cost(() => loadJobPage(api, filter));
        expect(page.calls, JSON.stringify(narrowed)).toBe(1);
        expect(page.bytes, JSON.stringify(narrowed)).toBeLessThan(MAX_PAGE_BYTES);
        const expected: string[] = [];
        for (let n = JOBS; n > 0 && expected.length < PAGE_SIZE; n--) if (matches(n)) expected.push(idOf(baseMs, n));
        expect(
          page.value.jobs.map((job) => job.id),
          JSON.stringify(narrowed),
        ).toEqual(expected);
      }
    });

    it('reads one page of index entries in order for the newest jobs, and for a type in a state', async () => {
      // As the engine asks the store for the first page: one more row than the page, newest first.
      const page = { limit: PAGE_SIZE + 1, newestFirst: true };
      expect(await opened.examined(page)).toBeLessThanOrEqual(PAGE_SIZE + 1);
      const dead = { ...page, name: 'imageConvert', states: ['dead'] as const };
      expect(await opened.examined(dead)).toBeLessThanOrEqual(PAGE_SIZE + 1);
      const older = { ...dead, beforeId: idOf(baseMs, 50_000) };
      expect(await opened.examined(older)).toBeLessThanOrEqual(PAGE_SIZE + 1);
    });

    it('reads at most a page per job type for a state without a type, however rare the state', async () => {
      const page = { limit: PAGE_SIZE + 1, newestFirst: true };
      // Each type's run of the state: its index entries, its rows, and the merge's own rows where the store
      // merges in a temporary table; the types are found first, one probe each.
      const perType = 3 * (PAGE_SIZE + 1);
      for (const state of ['cancelled', 'dead'] as const) {
        expect(await opened.examined({ ...page, states: [state] }), state).toBeLessThanOrEqual(TYPES.length * perType);
      }
      const ready = { ...page, states: ['waiting'] as const, due: { now: new Date(baseMs + 2 * JOBS), ready: true } };
      expect(await opened.examined(ready)).toBeLessThanOrEqual(TYPES.length * perType);
      // A version within a state: each type's run passes over its other version too (half its jobs).
      const v2 = { ...page, states: ['dead'] as const, version: 2 };
      expect(await opened.examined(v2)).toBeLessThanOrEqual(2 * TYPES.length * perType);
      // A type's waiting jobs are kept in two states (`delayed`, `waiting`): two runs, neither sorted whole.
      const waiting = { ...page, name: 'sendEmail', states: ['waiting'] as const };
      expect(await opened.examined(waiting)).toBeLessThanOrEqual(2 * perType);
      // A key without a type: one look-up per type in the key's index.
      expect(await opened.examined({ ...page, idempotencyKey: 'key-45050' })).toBeLessThanOrEqual(8 * TYPES.length);
    });

    it('reads at most a page per state for a group without a type, in a state or not', async () => {
      const page = { limit: PAGE_SIZE + 1, newestFirst: true };
      // The group's run in each state, read through the group index up to a page: its index entries, its rows,
      // and the merge's own rows where the store merges in a temporary table.
      const perState = 3 * (PAGE_SIZE + 1);
      expect(await opened.examined({ ...page, group: 'acme', states: ['dead'] })).toBeLessThanOrEqual(perState);
      // Waiting jobs are kept in two states (`delayed`, `waiting`).
      const ready = { ...page, group: 'acme', states: ['waiting'] as const };
      expect(await opened.examined(ready)).toBeLessThanOrEqual(2 * perState);
      expect(await opened.examined({ ...page, group: 'acme' })).toBeLessThanOrEqual(KEPT_STATES * perState);
    });

    it('finds one job by its idempotency key or its id, and a creation time range, in one call', async () => {
      const { api, cost } = client;
      const byKey = await cost(() => loadJobPage(api, { ...NO_FILTER, q: 'key-45050' }));
      expect(byKey.calls).toBe(1);
      expect(byKey.value.jobs.map((job) => job.id)).toEqual([idOf(baseMs, 45_050)]);
      expect(byKey.value.jobs[0]).toMatchObject({ idempotencyKey: 'key-45050', name: 'resizeVideo', version: 1 });
      const byId = await cost(() => loadJobPage(api, { ...NO_FILTER, q: idOf(baseMs, 777) }));
      expect(byId.calls).toBe(1);
      expect(byId.value.jobs.map((job) => job.id)).toEqual([idOf(baseMs, 777)]);
      const elsewhere = await cost(() => loadJobPage(api, { ...NO_FILTER, q: idOf(baseMs, 777), state: 'dead' }));
      expect(elsewhere.value.jobs).toEqual([]);
      // Jobs 20,001 to 20,010 by their creation times, as a `datetime-local` field writes them (local time).
      const local = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 23);
      const range = { ...NO_FILTER, from: local(baseMs + 20_001), to: local(baseMs + 20_010) };
      const inRange = await cost(() => loadJobPage(api, range));
      expect(inRange.calls).toBe(1);
      expect(inRange.value.jobs.map((job) => job.id)).toEqual(
        Array.from({ length: 10 }, (_, index) => idOf(baseMs, 20_010 - index)),
      );
      expect(inRange.value.nextCursor).toBeNull();
    });
  },
);
