import { type JobRecord, type ListFilter, STORED_STATES } from '../../engine/store.ts';
import { type KeptState, keptStates } from '../shared/not-started.ts';
import { GROUP_LISTING_INDEX } from './baseline.ts';
import { type Queryable, selectRows } from './connection.ts';
import { jobRow, jobSelectFor, NOT_STARTED_SQL, sqlDate } from './records.ts';
import type { Tables } from './tables.ts';

/**
 * The indexes a page is merged from, each with the columns of its runs: `listing` `(name, state, id)`, a job
 * type's runs, and `group_listing` `(job_group, group_state, id)`, a group's (`group_state` is a grouped job's
 * state).
 */
const RUN_INDEXES = {
  name: { index: 'listing', column: 'name', state: 'state' },
  group: { index: GROUP_LISTING_INDEX, column: 'job_group', state: 'group_state' },
} as const;

type RunIndex = keyof typeof RUN_INDEXES;

/** One run of a `RUN_INDEXES` index a page is merged from: a job type's or a group's jobs in one kept state. */
interface Run {
  lead: string;
  state: KeptState;
}

/**
 * `Store.listJobs`: the page of jobs `filter` matches in id order (descending with `newestFirst`), for a
 * non-empty `states` and a positive `limit`.
 *
 * A filter with a type, or with states other than `completed`, is read run by run of the `listing` index
 * `(name, state, id)`, one job type in one kept state each, up to a page from each, merged by id in one
 * statement: a page reads at most a page per run, however rare the match, and is never sorted whole.
 * Without a type, the types holding jobs in those states are read first, off the same index (a loose index
 * scan: one probe per type). A group without a type is read the same way through `group_listing`
 * `(job_group, group_state, id)`, one run per kept state of the filter (each state without one). An idempotency or
 * debounce key without a type is looked up per type, through its `(name, key)` index. Any other filter walks
 * the primary key in id order: none, only a version or time range, or `completed` (most of a table: the walk
 * finds a page at once, where merging would read a page of every type).
 */
export async function listJobs(db: Queryable, t: Tables, filter: ListFilter): Promise<JobRecord[]> {
  const { ids, name, group, states } = filter;
  if (ids === undefined && isKeyed(filter) && name === undefined) {
    const names = await typesWithKey(db, t, filter);
    return names.length === 0 ? [] : selectInOrder(db, t, filter, { sql: ['name IN (?)'], values: [names] });
  }
  if (ids === undefined && !isKeyed(filter) && name !== undefined) {
    const runs = (states ?? STORED_STATES).flatMap(keptStates).map((state) => ({ lead: name, state }));
    return selectRuns(db, t, filter, 'name', runs);
  }
  if (ids === undefined && !isKeyed(filter) && group !== undefined) {
    const runs = (states ?? STORED_STATES).flatMap(keptStates).map((state) => ({ lead: group, state }));
    return selectRuns(db, t, filter, 'group', runs);
  }
  if (ids === undefined && !isKeyed(filter) && states?.every((state) => state !== 'completed')) {
    return selectRuns(db, t, filter, 'name', await typesInStates(db, t, states.flatMap(keptStates)));
  }
  return selectInOrder(db, t, filter, { sql: [], values: [] });
}

/** The page of the jobs matching `filter` and `also`, read in id order. */
async function selectInOrder(
  db: Queryable,
  t: Tables,
  filter: ListFilter,
  also: { sql: string[]; values: unknown[] },
): Promise<JobRecord[]> {
  const where = conditionsOf(filter);
  const conditions = [...also.sql, ...where.sql];
  const sql = `SELECT ${jobSelectFor(filter)} FROM ${t.jobs}
    ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''} ${orderOf(filter)} LIMIT ?`;
  return (await selectRows(db, sql, [...also.values, ...where.values, filter.limit])).map(jobRow);
}

const isKeyed = (filter: ListFilter) => filter.idempotencyKey !== undefined || filter.debounceKey !== undefined;

const orderOf = (filter: ListFilter) => `ORDER BY id${filter.newestFirst ? ' DESC' : ''}`;

/** The page merged from `runs` of the `by` index, each read through it up to the page's length. */
async function selectRuns(
  db: Queryable,
  t: Tables,
  filter: ListFilter,
  by: RunIndex,
  runs: Run[],
): Promise<JobRecord[]> {
  if (runs.length === 0) return [];
  const { states: _states, ...rest } = filter;
  const where = conditionsOf(by === 'name' ? { ...rest, name: undefined } : { ...rest, group: undefined });
  const { index, column, state } = RUN_INDEXES[by];
  const run = `(SELECT ${jobSelectFor(filter)} FROM ${t.jobs} FORCE INDEX (${index})
    WHERE ${[`${column} = ?`, `${state} = ?`, ...where.sql].join(' AND ')} ${orderOf(filter)} LIMIT ?)`;
  const values = runs.flatMap(({ lead, state }) => [lead, state, ...where.values, filter.limit]);
  if (runs.length === 1) return (await selectRows(db, run, values)).map(jobRow);
  const sql = `${runs.map(() => run).join(' UNION ALL ')} ${orderOf(filter)} LIMIT ?`;
  return (await selectRows(db, sql, [...values, filter.limit])).map(jobRow);
}

/** The types holding jobs in each of `states`: one loose scan of `listing` per state. */
async function typesInStates(db: Queryable, t: Tables, states: KeptState[]): Promise<Run[]> {
  const perState = `(SELECT DISTINCT name, state FROM ${t.jobs} FORCE INDEX (listing) WHERE state = ?)`;
  const rows = await selectRows(db, states.map(() => perState).join(' UNION ALL '), states);
  return rows.map((row) => ({ lead: String(row.name), state: row.state as KeptState }));
}

/** The types holding the filter's idempotency or debounce key: a loose scan of that key's `(name, key)` index. */
async function typesWithKey(db: Queryable, t: Tables, filter: ListFilter): Promise<string[]> {
  const [column, key] =
    filter.idempotencyKey !== undefined
      ? ['idempotency_key', filter.idempotencyKey]
      : ['debounce_key', filter.debounceKey];
  const rows = await selectRows(db, `SELECT DISTINCT name FROM ${t.jobs} WHERE ${column} = ?`, [key]);
  return rows.map((row) => String(row.name));
}

/** The conditions of `filter` but its keyset order, as SQL and values. */
function conditionsOf(filter: Omit<ListFilter, 'limit'>): { sql: string[]; values: unknown[] } {
  const sql: string[] = [];
  const values: unknown[] = [];
  const add = (condition: string, ...args: unknown[]) => {
    sql.push(condition);
    values.push(...args);
  };
  if (filter.name !== undefined) add('name = ?', filter.name);
  // `IN ()` is not SQL: no ids matches no row.
  if (filter.ids !== undefined) {
    if (filter.ids.length > 0) add('id IN (?)', filter.ids);
    else add('FALSE');
  }
  if (filter.states !== undefined) add('state IN (?)', filter.states.flatMap(keptStates));
  if (filter.due !== undefined) {
    add(`(state NOT IN ${NOT_STARTED_SQL} OR run_at ${filter.due.ready ? '<=' : '>'} ?)`, sqlDate(filter.due.now));
  }
  const equal = {
    version: filter.version,
    job_group: filter.group,
    idempotency_key: filter.idempotencyKey,
    debounce_key: filter.debounceKey,
  };
  for (const [column, value] of Object.entries(equal)) if (value !== undefined) add(`${column} = ?`, value);
  if (filter.afterId !== undefined) add('id > ?', filter.afterId);
  if (filter.beforeId !== undefined) add('id < ?', filter.beforeId);
  return { sql, values };
}
